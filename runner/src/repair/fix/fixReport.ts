import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AttemptReport, FixReport } from '../../protocol/fixReport.js';
import { EMPTY_PATCH, type PatchBytes } from '../../workspace/patchBytes.js';
import { runEnding } from '../explainEnding.js';
import { renderSummary } from '../renderSummary.js';
import { patchSize, type Selection } from '../selectWinner.js';
import { InputError } from '../../protocol/inputError.js';
import { type BrokenEnvironment, describeBrokenEnvironment } from '../verdicts/classifyBaseline.js';
import type { Verdict } from '../verdicts/judgeTestRun.js';
import type { IssueTests } from '../verdicts/issueTests.js';
import type { Baseline } from './runBaseline.js';
import type { AttemptResult, FixOutcome, RunScope } from './fixRun.js';
import type { RunCells } from './runCells.js';
import type { Settled } from './settleWorktrees.js';
import type { RunStore } from '../../store/runStore.js';
import type { Usage } from '../../protocol/usage.js';
import { isBudgetStop, type ModelPrice, NO_USAGE } from '../usage/usageAccounting.js';
import { cellTimes, runUsageOf, usageOf, wallBetween } from '../usage/usageFigures.js';

export interface ReportInput extends RunScope {
  cells: RunCells;
  baseline: Baseline;
  results: AttemptResult[];
  selection: Selection;
  groundTruth: FixReport['ground_truth'];
  fixed: boolean;
  settled: Settled;
  issueTests: IssueTests;
}

/**
 * The tests could not run on the base commit (a command or module missing, no test ran, the
 * network refused, a timeout): bad input, not a failed fix. Carries the report that says so.
 */
export class BrokenEnvironmentError extends InputError {
  constructor(
    message: string,
    readonly report: FixReport,
  ) {
    super(message);
  }
}

/** A run whose baseline could not run ends here: its report, recorded in the store; the error that carries it. */
export function brokenEnvironmentReport(
  input: RunScope & { cells: RunCells; verdict: Verdict; broken: BrokenEnvironment },
): BrokenEnvironmentError {
  const { run, deps, cells, verdict, broken } = input;
  const message = describeBrokenEnvironment(broken);
  const report: FixReport = {
    ...reportHead(input, 'broken_environment'),
    baseline: verdict,
    environment: broken,
    dependencies: cells.dependencies,
    attempts: [],
    winner: null,
    best: null,
    ground_truth: null,
    applied_to: null,
    cells: deps.store.cellCount(run.runId),
    duration_ms: Date.now() - run.started,
  };
  deps.store.finishRun(run.runId, 'failed', null, { ...report, error: message });
  return new BrokenEnvironmentError(message, report);
}

/**
 * Phase 6, report: the run's report, recorded in the store (the run ends here) and said in
 * one progress line, with the patch runPreparedFix writes to --out beside it.
 */
export function finishReport(input: ReportInput): FixOutcome & { patch: PatchBytes } {
  const { run, request, deps, cells, baseline, results, selection, groundTruth, fixed, settled } = input;
  const { store } = deps;
  const { winner } = selection;
  const closest = selection.best ?? winner;
  const usage = reportUsage(store, run.runId, Date.now() - run.started, request.price);
  const report: FixReport = {
    ...reportHead(input, fixed ? 'fixed' : 'not_fixed'),
    baseline: baseline.verdict,
    issue_tests: input.issueTests,
    environment: null,
    dependencies: cells.dependencies,
    attempts: results.map((r) => attemptReport(r, usage.attempts.get(r.index) ?? null)),
    winner:
      fixed && winner
        ? {
            attempts: winner.attempts,
            agreement: winner.agreement,
            diff_size: winner.size,
            branch: settled.winnerBranch,
            verdict: groundTruth!.verdict!,
          }
        : null,
    best: !fixed && closest ? { attempts: closest.attempts, diff_size: closest.size, verdict: closest.verdict } : null,
    ground_truth: groundTruth,
    applied_to: settled.appliedTo,
    cells: store.cellCount(run.runId),
    ...cellNodes(store, run.runId),
    duration_ms: Date.now() - run.started,
    usage: usage.run,
  };
  report.ending = runEnding(report);
  store.finishRun(run.runId, fixed ? 'fixed' : 'not_fixed', fixed && settled.winnerResult ? settled.winnerResult.index : null, report);
  if (fixed)
    store.setReview(run.runId, settled.appliedTo?.startsWith('working tree') ? 'applied' : 'pending', settled.winnerResult?.index ?? null);
  deps.progress(fixed ? `${report.ending} (on ${settled.winnerBranch})` : report.ending);
  return { report, exitCode: fixed ? 0 : 1, patch: fixed && winner ? winner.patch : (selection.best?.patch ?? EMPTY_PATCH) };
}

/** What every report of a run says first: the run, where and with what it ran. */
function reportHead(
  { run, deps }: RunScope,
  status: FixReport['status'],
): Pick<FixReport, 'run_id' | 'status' | 'repo' | 'base_commit' | 'test_cmd' | 'provider' | 'image' | 'model'> {
  return {
    run_id: run.runId,
    status,
    repo: run.repo,
    base_commit: run.base,
    test_cmd: run.testCmd,
    provider: deps.provider.name,
    image: run.image,
    model: deps.model.spec,
  };
}

function attemptReport(r: AttemptResult, usage: Usage | null): AttemptReport {
  return {
    index: r.index,
    attempt_id: r.attemptId,
    temperature: r.temperature,
    status: r.error ? 'failed' : isBudgetStop(r.outcome?.stop) ? 'budget' : 'finished',
    stop: r.outcome?.stop ?? null,
    turns: r.outcome?.turns ?? 0,
    tokens: r.outcome?.tokens ?? 0,
    verdict: r.verdict,
    diff_size: patchSize(r.patch),
    review_warnings: r.warnings,
    omitted: r.omitted,
    generated: r.generated,
    error: r.error,
    ...(usage ? { usage } : {}),
  };
}

/** Time and tokens per attempt and for the run, from what the store recorded of them. */
function reportUsage(
  store: RunStore,
  runId: string,
  wallMs: number,
  price: ModelPrice | undefined,
): { attempts: Map<number, Usage>; run: Usage } {
  const tokens = store.attemptUsage(runId);
  const times = cellTimes(store.cells(runId));
  const now = Date.now();
  const attempts = new Map(
    store
      .attempts(runId)
      .map((a) => [
        a.idx,
        usageOf(wallBetween(a.started_at, a.finished_at, now), times.byAttempt.get(a.idx) ?? 0, tokens.get(a.idx) ?? NO_USAGE, price),
      ]),
  );
  return { attempts, run: runUsageOf(wallMs, times.all, [...tokens.values()], price) };
}

/** winner.diff, report.json and summary.md in --out; the summary also in GitHub's step summary. */
export function writeOutputs(outDir: string | undefined, report: FixReport, patch: PatchBytes): void {
  const summary = renderSummary(report);
  if (outDir) {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, 'winner.diff'), patch);
    writeFileSync(join(outDir, 'report.json'), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(join(outDir, 'summary.md'), summary);
  }
  const step = process.env.GITHUB_STEP_SUMMARY;
  if (step && existsSync(step)) appendFileSync(step, summary + '\n');
  else if (step) writeFileSync(step, summary + '\n');
}

/** Swarm runs: which node ran each cell (nothing for runs whose cells ran on this machine). */
function cellNodes(store: RunStore, runId: string): { cell_nodes?: FixReport['cell_nodes'] } {
  const placed = store
    .cells(runId)
    .filter((c) => c.node)
    .map((c) => ({ cell_id: c.cell_id, purpose: c.purpose, attempt: c.attempt_idx, node: c.node! }));
  return placed.length > 0 ? { cell_nodes: placed } : {};
}
