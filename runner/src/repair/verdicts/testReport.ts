/** What one test run's output says, framework by framework. */
export type TestOutcome = 'pass' | 'fail' | 'skip';

export interface TestReport {
  framework: string;
  passed: number;
  failed: number;
  skipped: number;
  /** Per-test outcomes when the output names tests (needed to find regressions). */
  tests: Map<string, TestOutcome>;
  /** The output stopped before the framework's own end (a crash mid-run): why, in words. */
  cutShort?: string;
  /** Second names of tests already named (a failure's suite chain beside its title): not more tests. */
  aliases?: ReadonlySet<string>;
}

export function emptyReport(framework: string): TestReport {
  return { framework, passed: 0, failed: 0, skipped: 0, tests: new Map() };
}

/** Counts from named tests, for parsers whose output has no summary line. */
export function countTests(report: TestReport): TestReport {
  let passed = 0,
    failed = 0,
    skipped = 0;
  for (const o of report.tests.values()) {
    if (o === 'pass') passed++;
    else if (o === 'fail') failed++;
    else skipped++;
  }
  return { ...report, passed, failed, skipped };
}

/** Strips ANSI colour codes: reporters colour their output even when piped, sometimes. */
export function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r\n?/g, '\n');
}

/** Pure: one report from several (one JUnit XML file per test class); counts from the names. */
export function mergeReports(framework: string, reports: readonly TestReport[]): TestReport {
  const merged = emptyReport(framework);
  for (const r of reports) {
    for (const [name, outcome] of r.tests) {
      // A test reported twice (a rerun, two modules' same class) counts as failed if either failed.
      if (merged.tests.get(name) !== 'fail') merged.tests.set(name, outcome);
    }
  }
  return countTests(merged);
}
