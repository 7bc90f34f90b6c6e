import { someNames } from '../verdicts/someNames.js';
import { type FailingFirstPlan, plural, type TargetedRun, targetedOutcome } from '../verdicts/failingFirst.js';
import type { Judged } from '../verdicts/failingSet.js';
import { judgeTestRun, runReport, type Verdict } from '../verdicts/judgeTestRun.js';
import { parseTestOutput } from '../verdicts/parsers.js';
import { testRunCrash } from '../verdicts/testRunCrash.js';
import { runEnd, type RunCells, type TestRun } from './runCells.js';
import { deniedEgressOf } from '../verdicts/deniedEgress.js';

/** Whether a run's output names every one of `tests` passing. */
export function passedEvery(tests: string[], output: string): boolean {
  const report = parseTestOutput(output);
  return report !== null && tests.every((n) => report.tests.get(n) === 'pass');
}

/** A targeted run of the baseline's failing tests, and the red verdict it makes (null: the whole suite decides, `why`). */
export interface TargetedStep {
  test: TestRun;
  red: Verdict | null;
  why: string;
  seconds: number;
  /** Of the selected tests, those the run named failing (some may fail again though the step is not red). */
  stillFailing: string[];
}

/**
 * Only the baseline's failing tests (`run`), in a cell of their own: red when every one of them
 * fails again (the rest of the suite is not run; what else the change broke is not known).
 */
export async function targetedStep(
  cells: RunCells,
  run: TargetedRun,
  at: { worktree: string; attemptIdx: number; baseline: Judged | null },
  purpose: string,
): Promise<TargetedStep> {
  const test = await cells.testCell(at.worktree, purpose, at.attemptIdx, undefined, false, run);
  return judgeTargeted(run, test, at.baseline);
}

/** What a targeted run of `run`'s tests says: red when every one of them failed again. */
export function judgeTargeted(run: TargetedRun, test: TestRun, baseline: Judged | null): TargetedStep {
  // The cell's own time, not its wait for a slot.
  const seconds = Math.round(test.result.duration_ms / 100) / 10;
  const end = runEnd(test);
  const report = runReport(test.written, parseTestOutput(test.output), test.logWhole);
  const crash = testRunCrash(
    {
      exitCode: test.result.exit_code,
      timedOut: test.result.timed_out,
      killedBy: test.result.killed_by,
      limitsHit: test.result.limits_hit,
    },
    test.output,
    report,
  );
  const outcome = targetedOutcome(run, report, crash);
  const stillFailing = run.tests.filter((n) => report?.tests.get(n) === 'fail');
  if (!outcome.red) return { test, red: null, why: outcome.why, seconds, stillFailing };
  const n = plural(run.tests.length, 'failing test');
  const judged = judgeTestRun(test.result.exit_code, test.output, baseline, test.written, {
    npmHooks: false,
    end,
    egressDenied: deniedEgressOf(test.result.egress_denied),
  });
  return {
    test,
    seconds,
    stillFailing,
    why: `${outcome.stillFailing.length === 1 ? 'it fails' : 'all fail'} again: ${someNames(outcome.stillFailing)}`,
    red: {
      ...judged,
      green: false,
      // Only the selected tests ran: their failures are sure, what the rest would say is not known.
      failing_complete: false,
      failing_incomplete: `only the baseline's ${n} ran (${run.how})`,
      regressions_known: false,
      regressions_unknown: `only the baseline's ${n} ran, and ${outcome.stillFailing.length === 1 ? 'it' : 'all'} failed again: the rest of the suite was not run`,
      new_failing: [],
      targeted: { how: run.how, tests: run.tests, still_failing: outcome.stillFailing, seconds },
    },
  };
}

/**
 * An attempt's verdict with the baseline's failing tests first (failingFirst.ts): a targeted
 * cell that shows one of them failing again makes the attempt red there; otherwise, or when
 * the run cannot select them, the whole suite judges it as before.
 */
export async function failingFirstVerdict(
  cells: RunCells,
  plan: FailingFirstPlan,
  at: {
    worktree: string;
    attemptIdx: number;
    baseline: Judged | null;
    progress: (line: string) => void;
    /** What the attempt's latest run_tests printed (on an earlier tree, perhaps): a hint of what the targeted run would say. */
    latestRun?: string | null;
  },
  /** The attempt's own run of this tree (its last run_tests): the whole suite already ran. */
  first?: TestRun,
): Promise<{ test: TestRun; verdict: Verdict }> {
  const { worktree, attemptIdx, baseline, progress } = at;
  // Its own latest run_tests already passed them: a targeted run would most likely pass as well
  // and only add a cell before the whole suite. A hint only: the whole suite judges either way.
  const passedBefore = plan.kind === 'targeted' && at.latestRun ? passedEvery(plan.run.tests, at.latestRun) : false;
  if (passedBefore && !first)
    progress(`attempt ${attemptIdx}: its last run_tests passed the baseline's failing tests: the whole suite runs at once`);
  if (plan.kind === 'targeted' && !first && !passedBefore) {
    const step = await targetedStep(cells, plan.run, at, 'verdict_targeted');
    const n = plural(plan.run.tests.length, 'failing test');
    if (step.red) {
      progress(`attempt ${attemptIdx}: red in ${step.seconds} s on the ${n} (${step.why}); the rest of the suite not run`);
      return { test: step.test, verdict: step.red };
    }
    progress(`attempt ${attemptIdx}: ${step.why} (targeted run, ${step.seconds} s): running the whole suite`);
  }
  return cells.judgedTestCell(worktree, 'verdict', attemptIdx, baseline, first);
}
