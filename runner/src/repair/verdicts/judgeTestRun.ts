import { baselineFailuresUnseen, failingListCompleteness, type Judged, regressionsFrom, type RunEnd } from './failingSet.js';
import { failedNetworkHook, type HookFailure, lifecycleStages } from './npmLifecycle.js';
import { type FixRule, judgeFix } from './issueTests.js';
import { parseTestOutput } from './parsers.js';
import { combineReports, countTests, plain, type TestReport } from './testReport.js';
import type { DeniedEgress } from './deniedEgress.js';

export interface Verdict {
  exit_code: number;
  framework: string | null;
  passed: number;
  failed: number;
  skipped: number;
  /** Failing test names, when the output names them. */
  failing: string[];
  /** The failing list names every test that failed; else why not (failing_incomplete). */
  failing_complete: boolean;
  failing_incomplete: string | null;
  /** Tests that fail now and did not fail in the baseline. */
  regressions: string[];
  /** Of the regressions, tests the baseline did not have at all (it named every test it ran). */
  new_failing: string[];
  /** Lifecycle hooks (npm posttest...) that failed for want of the network after the tests passed. */
  hook_failures: HookFailure[];
  /** True when both failing lists (the baseline's and this run's) are whole; else regressions_unknown says why. */
  regressions_known: boolean;
  regressions_unknown: string | null;
  /**
   * The selection's first criterion: the issue's tests pass and nothing else breaks (every test
   * failing now failed on the base commit too and is not the issue's), or, with --strict or
   * when the baseline's failing list is not whole, exit 0 with nothing failing (issueTests.ts).
   */
  green: boolean;
  /** Of the baseline's failing tests, those this run shows passing. */
  fixed: string[];
  /** Tests failing here that failed on the base commit too and are not the issue's: not caused by this change. */
  failing_before: string[];
  /** The issue's tests this verdict was held to (issueTests.ts): every one must pass. */
  issue_tests: string[];
  /** Green so far: the run's issue tests, known when every attempt is judged, may still make it red (issueTests.ts). */
  provisional: boolean;
  /** The test runner died before reporting, twice (out of memory, a limit, a signal): why. Such a run is no verdict on the change. */
  could_not_run: string | null;
  /** This verdict is an earlier run's on the same tree (the attempt's own run_tests, or another attempt's verdict of the same change): which; null when its own cell ran. */
  reused_from: string | null;
  /** Only the baseline's failing tests ran (failingFirst.ts) and some failed again: red without the whole suite. */
  targeted: { how: string; tests: string[]; still_failing: string[]; seconds: number } | null;
  /** What the egress proxy refused the test cell (its allow_net did not name it, or the user's deny_net did). */
  egress_denied: DeniedEgress[];
}

/**
 * Pure: one run's report from what its runner wrote (a file) and what its console showed. A
 * file of the console's own framework (pytest's JUnit XML) names every test, the console adds
 * what the file leaves out (pytest's subtests), so a run read from either names tests alike;
 * counts are the console's when it is whole. A file of another kind (Maven's) is one more run
 * beside whatever the console shows. A file asked for through the environment is the account
 * of a run that finished, so it counts only when the console shows that run's end (pytest's
 * totals): code under test can write the file itself and exit 0 before any total (red team).
 */
export function runReport(written: TestReport | null, console: TestReport | null, consoleWhole: boolean): TestReport | null {
  const consoleParts = console ? console.framework.split(' + ') : [];
  if (written && REQUESTED_REPORTS.has(written.framework) && !consoleParts.includes(written.framework)) return console;
  if (!written || !console) return written ?? console;
  // A failure either names stands: the console's (another framework's run in the same command) never gives way to the file.
  if (!consoleParts.includes(written.framework)) return combineReports([written, console]);
  const tests = new Map(written.tests);
  for (const [name, outcome] of console.tests) if (tests.get(name) !== 'fail') tests.set(name, outcome);
  const counts = consoleWhole ? console : countTests({ ...written, tests });
  return {
    ...console,
    passed: counts.passed,
    failed: counts.failed,
    skipped: counts.skipped,
    tests,
  };
}

/** Frameworks whose report file the runner asks for through the environment (cellReports.ts). */
const REQUESTED_REPORTS = new Set(['pytest']);

/** What the baseline's verdict says of its failing list, for judging attempts against it. */
export function judgedBaseline(
  report: TestReport | null,
  verdict: Pick<Verdict, 'failing_complete' | 'failing_incomplete'>,
  rule: FixRule = { strict: false, named: [] },
): Judged {
  return {
    report,
    rule,
    completeness:
      verdict.failing_complete === true
        ? { complete: true }
        : { complete: false, why: verdict.failing_incomplete ?? 'it was recorded by an older runner' },
  };
}

export interface JudgeOptions {
  npmHooks: boolean;
  /** How the cell ended (timed out, a limit hit, the log cut); a whole run when absent. */
  end?: Omit<RunEnd, 'exitCode' | 'hookExcused'>;
  /** What the egress proxy refused the cell (deniedEgressOf its result); none when absent. */
  egressDenied?: DeniedEgress[];
}

const WHOLE_RUN: Omit<RunEnd, 'exitCode' | 'hookExcused'> = { timedOut: false, limitsHit: [], logWhole: true };

/**
 * Pure: the verdict of one test run, compared with the baseline run on the base commit (null:
 * this is the baseline). A test that fails now and did not in the baseline is a regression;
 * whether that could be checked at all is said (regressions_known), and if not, why.
 * `written` is the report the test runner wrote itself (JUnit XML): it names every test, so
 * it comes before the console.
 */
export function judgeTestRun(
  exitCode: number,
  output: string,
  baseline: Judged | null,
  written: TestReport | null = null,
  opts: JudgeOptions = { npmHooks: true },
): Verdict {
  // npm's test run: the report is the test stage's (nested scripts included); a hook after it
  // that failed only for want of the network is said, not held against the tests. Only when
  // the command is npm's: any other command printing npm's banners is just printing.
  const stages = lifecycleStages(plain(output));
  const main = stages.find((s) => stages.every((o) => o === s || o.name === `pre${s.name}` || o.name === `post${s.name}`)) ?? null;
  const hook = !opts.npmHooks
    ? null
    : failedNetworkHook(exitCode, stages, (s) => {
        const r = parseTestOutput(s.output);
        return Boolean(r && r.failed === 0 && r.passed > 0);
      });
  const report = runReport(
    written,
    (main ? parseTestOutput(main.output) : null) ?? parseTestOutput(output),
    (opts.end ?? WHOLE_RUN).logWhole,
  );
  const failing = report ? [...report.tests].filter(([, o]) => o === 'fail').map(([n]) => n) : [];
  const listed = failingListCompleteness(report, { exitCode, hookExcused: hook !== null, ...(opts.end ?? WHOLE_RUN) });
  const unseen = baselineFailuresUnseen(report, baseline);
  const completeness = listed.complete && unseen ? { complete: false as const, why: unseen } : listed;
  const judged: Judged = { report, completeness };
  const failedOrRan = baseline
    ? regressionsFrom(judged, baseline)
    : { known: false as const, regressions: [], why: 'this is the baseline, which regressions are judged against' };
  // A test that passed on the base commit and is skipped now no longer passes: a change that
  // turns it into a skip (raise SkipTest, a feature check) broke it all the same (red team).
  const skippedNow = [...(baseline?.report?.tests ?? [])]
    .filter(([n, o]) => o === 'pass' && report?.tests.get(n) === 'skip')
    .map(([n]) => n);
  const found = { ...failedOrRan, regressions: [...failedOrRan.regressions, ...skippedNow] };
  // The exit status is the command's to set: a run that names a failure, stopped before its
  // framework's end, or does not show the baseline's failing tests passing is not green by
  // the whole-suite rule; by the F/P rule it may still be a fix (judgeFix).
  const wholeSuiteGreen =
    (exitCode === 0 || hook !== null) &&
    found.regressions.length === 0 &&
    (report?.failed ?? 0) === 0 &&
    failing.length === 0 &&
    !report?.cutShort &&
    unseen === null;
  const fix = baseline
    ? judgeFix(judged, baseline, found, wholeSuiteGreen)
    : { green: wholeSuiteGreen, fixed: [], failing_before: [], issue_tests: [], provisional: false };
  return {
    exit_code: exitCode,
    framework: report?.framework ?? null,
    passed: report?.passed ?? 0,
    failed: report?.failed ?? (exitCode === 0 ? 0 : 1),
    skipped: report?.skipped ?? 0,
    failing,
    failing_complete: completeness.complete,
    failing_incomplete: completeness.complete ? null : completeness.why,
    regressions: found.regressions,
    new_failing: found.known ? found.newFailing : [],
    regressions_known: found.known,
    regressions_unknown: found.known ? null : found.why,
    hook_failures: hook ? [hook] : [],
    could_not_run: null,
    reused_from: null,
    targeted: null,
    egress_denied: opts.egressDenied ?? [],
    ...fix,
  };
}
