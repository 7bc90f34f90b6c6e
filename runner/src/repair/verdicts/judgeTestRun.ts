import { parseTestOutput } from './parsers.js';
import type { TestReport } from './testReport.js';

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
  /** False when the outputs name no tests, so regressions could not be checked. */
  regressions_known: boolean;
  /** Exit 0 and no regressions: the selection's first criterion. */
  green: boolean;
}

/**
 * Pure: the verdict of one test run, compared with the baseline run on the base commit.
 * A test counts as regressed when it passed in the baseline and fails (or vanished from a
 * failing run) now.
 */
export function judgeTestRun(exitCode: number, output: string, baseline: TestReport | null, junitXml?: string): Verdict {
  const report = (junitXml ? parseTestOutput(junitXml) : null) ?? parseTestOutput(output);
  const failing = report ? [...report.tests].filter(([, o]) => o === 'fail').map(([n]) => n) : [];
  const known = Boolean(report && baseline && report.tests.size > 0 && baseline.tests.size > 0);
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
    green: exitCode === 0 && regressions.length === 0,
  };
}
