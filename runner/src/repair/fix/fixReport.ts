import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AttemptReport, FixReport } from '../../protocol/fixReport.js';
import { EMPTY_PATCH, type PatchBytes } from '../../workspace/patchBytes.js';
import { runEnding } from '../explainEnding.js';
import { renderSummary } from '../renderSummary.js';
import { patchSize, type Selection } from '../selectWinner.js';
import type { Baseline } from './runBaseline.js';
import type { AttemptResult, FixOutcome, RunScope } from './fixRun.js';
import type { RunCells } from './runCells.js';
import type { Settled } from './settleWorktrees.js';
import type { RunStore } from '../../store/runStore.js';

export interface ReportInput extends RunScope {
  cells: RunCells;
  baseline: Baseline;
  results: AttemptResult[];
  selection: Selection;
  groundTruth: FixReport['ground_truth'];
  fixed: boolean;
  settled: Settled;
}

/**
 * Phase 6, report: the run's report, recorded in the store (the run ends here), written to
 * --out and the CI step summary, and said in one progress line.
 */
export function finishReport(input: ReportInput): FixOutcome {
  const { run, request, deps, cells, baseline, results, selection, groundTruth, fixed, settled } = input;
  const { store } = deps;
  const { winner } = selection;
  const closest = selection.best ?? winner;
  const report: FixReport = {
    run_id: run.runId,
    status: fixed ? 'fixed' : 'not_fixed',
    repo: run.repo,
    base_commit: run.base,
    test_cmd: run.testCmd,
    provider: deps.provider.name,
    image: run.image,
    model: deps.model.spec,
    baseline: baseline.verdict,
    environment: null,
    dependencies: cells.dependencies,
    attempts: results.map(attemptReport),
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
  };
  report.ending = runEnding(report);
  store.finishRun(run.runId, fixed ? 'fixed' : 'not_fixed', fixed && settled.winnerResult ? settled.winnerResult.index : null, report);
  if (fixed) store.setReview(run.runId, settled.appliedTo?.startsWith('working tree') ? 'applied' : 'pending');
  writeOutputs(request.out_dir, report, fixed && winner ? winner.patch : (selection.best?.patch ?? EMPTY_PATCH));
  deps.progress(fixed ? `${report.ending} (on ${settled.winnerBranch})` : report.ending);
  return { report, exitCode: fixed ? 0 : 1 };
}

function attemptReport(r: AttemptResult): AttemptReport {
  return {
    index: r.index,
    attempt_id: r.attemptId,
    temperature: r.temperature,
    status: r.error ? 'failed' : 'finished',
    stop: r.outcome?.stop ?? null,
    turns: r.outcome?.turns ?? 0,
    tokens: r.outcome?.tokens ?? 0,
    verdict: r.verdict,
    diff_size: patchSize(r.patch),
    review_warnings: r.warnings,
    omitted: r.omitted,
    error: r.error,
  };
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
