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

/** Pure: several runs' reports as one; a test two runs name fails if either says it failed. */
export function combineReports(reports: readonly TestReport[]): TestReport {
  const tests = new Map<string, TestOutcome>();
  for (const r of reports) for (const [name, outcome] of r.tests) if (tests.get(name) !== 'fail') tests.set(name, outcome);
  const cut = reports.map((r) => r.cutShort).filter((c): c is string => Boolean(c));
  return {
    framework: [...new Set(reports.flatMap((r) => r.framework.split(' + ')))].join(' + '),
    passed: reports.reduce((n, r) => n + r.passed, 0),
    failed: reports.reduce((n, r) => n + r.failed, 0),
    skipped: reports.reduce((n, r) => n + r.skipped, 0),
    tests,
    ...(cut.length > 0 ? { cutShort: cut.join('; ') } : {}),
  };
}
