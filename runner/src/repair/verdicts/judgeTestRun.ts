import { failedNetworkHook, type HookFailure, splitNpmStages } from './npmLifecycle.js';
import { parseTestOutput } from './parsers.js';
import { plain, type TestReport } from './testReport.js';

export interface Verdict {
  exit_code: number;
  framework: string | null;
  passed: number;
  failed: number;
  skipped: number;
  /** Failing test names, when the output names them. */
  failing: string[];
  /** Tests that passed in the baseline and fail now. */
  regressions: string[];
  /** Lifecycle hooks (npm posttest...) that failed for want of the network after the tests passed. */
  hook_failures: HookFailure[];
  /**
   * True only when regressions were really checked: the baseline named the tests it passed
   * and this run named the tests it failed (pytest -q, for one, names no passing test).
   */
  regressions_known: boolean;
  /** Exit 0 and no regressions: the selection's first criterion. */
  green: boolean;
}

/** Pure: the report names every test of an outcome it counted (e.g. all its passing tests). */
export function namesAll(report: TestReport, outcome: 'pass' | 'fail'): boolean {
  const named = [...report.tests.values()].filter((o) => o === outcome).length;
  return named >= (outcome === 'pass' ? report.passed : report.failed);
}

/**
 * Pure: the verdict of one test run, compared with the baseline run on the base commit.
 * A test the baseline ran and passed that fails now is a regression; whether that could be
 * checked at all is said (regressions_known). `written` is the report the test runner wrote
 * itself (JUnit XML): it names every test, so it comes before the console.
 */
export function judgeTestRun(
  exitCode: number,
  output: string,
  baseline: TestReport | null,
  written: TestReport | null = null,
  opts: { npmHooks: boolean } = { npmHooks: true },
): Verdict {
  // npm's test run: the report is the test stage's; a hook after it that failed only for
  // want of the network is said, not held against the tests. Only when the command is npm's:
  // any other command printing npm's banners is just printing.
  const stages = splitNpmStages(plain(output));
  const testStage = stages.find((s) => s.name === 'test');
  const hook = !opts.npmHooks
    ? null
    : failedNetworkHook(exitCode, stages, (s) => {
        const r = parseTestOutput(s.output);
        return Boolean(r && r.failed === 0 && r.passed > 0);
      });
  const report = written ?? (testStage ? parseTestOutput(testStage.output) : null) ?? parseTestOutput(output);
  const failing = report ? [...report.tests].filter(([, o]) => o === 'fail').map(([n]) => n) : [];
  const known = Boolean(report && baseline && baseline.passed > 0 && namesAll(baseline, 'pass') && namesAll(report, 'fail'));
  const regressions = known
    ? [...baseline!.tests].filter(([name, o]) => o === 'pass' && report!.tests.get(name) === 'fail').map(([name]) => name)
    : [];
  return {
    exit_code: exitCode,
    framework: report?.framework ?? null,
    passed: report?.passed ?? 0,
    failed: report?.failed ?? (exitCode === 0 ? 0 : 1),
    skipped: report?.skipped ?? 0,
    failing,
    regressions,
    regressions_known: known,
    hook_failures: hook ? [hook] : [],
    green: (exitCode === 0 || hook !== null) && regressions.length === 0,
  };
}
