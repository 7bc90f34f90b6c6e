import { untrackedNote } from './fix/checkRepository.js';
import type { FixRequest } from '../protocol/fixRequest.js';
import type { AttemptWorktree } from '../workspace/attemptWorktree.js';
import { groundTruthInRankOrder, isFixed, removeLeftGroundTruths } from './fix/groundTruth.js';
import { EarlyGroundTruths } from './fix/earlyGroundTruth.js';
import { brokenEnvironmentReport, finishReport, writeOutputs } from './fix/fixReport.js';
import { EMPTY_PATCH } from '../workspace/patchBytes.js';
import type { FixDeps, FixOutcome, PreparedRun, RunScope } from './fix/fixRun.js';
import { holdToIssueTests } from './fix/holdToIssueTests.js';
import { prepareDependencies } from './fix/prepareDependencies.js';
import { prepareRun } from './fix/prepareRun.js';
import { runAttempts } from './fix/runAttempts.js';
import { runBaseline } from './fix/runBaseline.js';
import { RunCells } from './fix/runCells.js';
import { settleWorktrees } from './fix/settleWorktrees.js';
import { selectWinner } from './selectWinner.js';

export { BrokenEnvironmentError } from './fix/fixReport.js';

/** The abort reason when the runner itself stops (its client went away): the run is interrupted, not cancelled. */
export class RunnerStopping extends Error {
  constructor() {
    super('interrupted: the runner stopped');
  }
}
export type { FixDeps, FixOutcome, PreparedRun } from './fix/fixRun.js';
export { prepareRun, resumeRequest } from './fix/prepareRun.js';

/**
 * Fix Issue in Cells: baseline (must fail), K sampled attempts in parallel worktrees whose
 * commands all run in cells, selection by real test results, ground truth on a fresh
 * checkout. The user's working tree, index and branch change only with --apply / --branch.
 */
export async function runFix(request: FixRequest, deps: FixDeps): Promise<FixOutcome> {
  const run = await prepareRun(request, deps);
  return runPreparedFix(run, request, deps);
}

/**
 * Everything after prepareRun. A caller that must hand out the run id before the run ends
 * (the RPC's fix/start) awaits prepareRun itself, then runs this in the background.
 */
export async function runPreparedFix(run: PreparedRun, request: FixRequest, userDeps: FixDeps): Promise<FixOutcome> {
  const { store, provider, progress, signal } = userDeps;
  // Stops the attempts when the baseline ends the run while they work; the user's cancel stops them too.
  const baselineEnded = new AbortController();
  const deps: FixDeps = { ...userDeps, signal: signal ? AbortSignal.any([signal, baselineEnded.signal]) : baselineEnded.signal };
  const { runId } = run;
  progress(
    `run ${runId}: ${run.resumed ? 'resumed, ' : ''}${run.temperatures.length} attempt(s) on ${provider.name}${run.image ? ` (${run.image})` : ''}, tests: ${run.testCmd}`,
  );
  const note = untrackedNote(run.untracked);
  if (note) progress(`note: ${note}`);
  for (const line of run.trust.notes) progress(`note: ${line}`);
  if (run.trust.include.length > 0)
    progress(
      `include: ${run.trust.include.length} untracked file(s) copied into every attempt: ${run.trust.include.slice(0, 5).join(', ')}${run.trust.include.length > 5 ? ', ...' : ''}`,
    );
  const scope: RunScope = { run, request, deps };
  const cells = new RunCells(scope);
  let depsWt: AttemptWorktree | null = null;
  let early: EarlyGroundTruths | null = null;
  try {
    depsWt = await prepareDependencies({ ...scope, cells });
    if (run.resumed) await removeLeftGroundTruths(run);
    // The attempts start with the baseline, not after it: their agents read, edit and run
    // tests while it runs (a model's minutes hide it), and only their verdicts wait for it.
    const baselineRun = runBaseline({ ...scope, cells });
    const endAttempts = () => baselineEnded.abort(new Error('the baseline ended the run'));
    const ended = (): never => {
      endAttempts();
      cells.baselineSettled();
      throw new Error('cancelled: the baseline ended the run');
    };
    // A baseline that ends the run (broken, green, failed) aborts the attempts before any of
    // them sees it: they stop as cancelled and are never judged. Otherwise their cells that
    // waited for its build cache go on.
    const judged = baselineRun.then((b) => {
      if ('broken' in b) return ended();
      cells.baselineSettled();
      return b.judged;
    }, ended);
    judged.catch(() => undefined);
    early = request.early_ground_truth ? new EarlyGroundTruths({ ...scope, cells }, judged) : null;
    const attempts = runAttempts({ ...scope, cells, baseline: judged, early });
    // Awaited below, after the baseline: a failure meanwhile must not go unhandled.
    attempts.catch(() => undefined);
    const stopAttempts = async () => {
      endAttempts();
      await attempts.catch(() => undefined);
      // The user's cancel, or the runner stopping, says what the attempts are (below).
      if (signal?.aborted) return;
      store.stopAttempts(runId);
      progress('attempts: stopped unjudged: they started with the baseline, which ended the run');
    };
    const baseline = await baselineRun.catch(async (e: unknown) => {
      await stopAttempts();
      throw e;
    });
    if ('broken' in baseline) {
      await stopAttempts();
      const error = brokenEnvironmentReport({ ...scope, cells, ...baseline });
      writeOutputs(request.out_dir, error.report, EMPTY_PATCH);
      throw error;
    }
    const results = await attempts;
    const issueTests = holdToIssueTests(scope, baseline, results);
    // Selection by real test results.
    let selection = selectWinner(
      results.filter((r) => r.verdict).map((r) => ({ attemptId: r.attemptId, index: r.index, verdict: r.verdict!, patch: r.patch })),
    );
    const checked = await groundTruthInRankOrder(
      { ...scope, cells, winner: selection.winner, baselineReport: baseline.judged, early, issueTests },
      selection,
    );
    const { groundTruth } = checked;
    selection = checked.selection;
    const fixed = isFixed(selection.winner, groundTruth);
    const settled = await settleWorktrees({ ...scope, cells, results, winner: selection.winner, fixed });
    const { patch, ...outcome } = finishReport({ ...scope, cells, baseline, results, selection, groundTruth, fixed, settled, issueTests });
    // The one place a run writes its outputs (--out, the CI step summary).
    writeOutputs(request.out_dir, outcome.report, patch);
    return outcome;
  } catch (e) {
    const row = store.getRun(runId);
    if (row?.status === 'running') {
      // A cancel is not a failure: the run says so, and so does each attempt it stopped or never started.
      if (signal?.aborted && signal.reason instanceof RunnerStopping)
        store.interruptRun(runId, { error: 'interrupted: the runner stopped' });
      else if (signal?.aborted) store.cancelRun(runId, { error: 'cancelled' });
      else store.finishRun(runId, 'failed', null, { error: (e as Error).message });
    }
    throw e;
  } finally {
    await early?.settle();
    await provider.drain();
    if (depsWt) await cells.cleanUp(depsWt);
    cells.removeCaches();
  }
}
