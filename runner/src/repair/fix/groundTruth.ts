import type { Judged } from '../verdicts/failingSet.js';
import type { FixReport } from '../../protocol/fixReport.js';
import { applyPatch } from '../../workspace/applyPatch.js';
import { createAttemptWorktree } from '../../workspace/attemptWorktree.js';
import type { CandidateGroup } from '../selectWinner.js';
import type { Verdict } from '../verdicts/judgeTestRun.js';
import { type RunScope, throwIfCancelled } from './fixRun.js';
import { purgePythonCaches } from './purgePythonCaches.js';
import { verdictTree } from './verdictTree.js';
import { type RunCells, WorktreeWithheldError } from './runCells.js';

export interface GroundTruthInput extends RunScope {
  cells: RunCells;
  /** The selected winner; null when no attempt was green (then there is nothing to check). */
  winner: CandidateGroup | null;
  baselineReport: Judged | null;
}

/**
 * Phase 4, ground truth: the winner's diff on a fresh checkout of the base, in a fresh cell.
 * What passed in the attempt's own worktree must pass from the patch alone.
 */
export async function checkGroundTruth({ run, deps, cells, winner, baselineReport }: GroundTruthInput): Promise<FixReport['ground_truth']> {
  if (!winner) return null;
  const index = /-a(\d+)$/.exec(winner.attempts[0] ?? '')?.[1];
  deps.progress(`ground truth: attempt ${index ?? winner.attempts[0]}'s change on a fresh checkout of the base commit`);
  // With the base commit's tests, as its verdict had them (verdictTree.ts).
  const baseTests = await verdictTree(run.repo, run.base, winner.patch);
  const gtWt = await createAttemptWorktree(run.repo, baseTests?.commit ?? run.base, `${run.runId}-truth`, {
    include: run.trust.include,
    onSkipped: deps.progress,
  });
  try {
    const applied = baseTests ? { applied: true, conflicts: [] } : await applyPatch(gtWt, winner.patch);
    let verdict: Verdict | null = null;
    if (applied.applied) {
      await purgePythonCaches(gtWt.path);
      try {
        const judged = await cells.judgedTestCell(gtWt.path, 'ground_truth', null, baselineReport);
        // A cell killed by the cancel says nothing about the patch: the run is cancelled, not "not fixed".
        throwIfCancelled(deps.signal);
        verdict = judged.verdict;
      } catch (e) {
        // The winner's tests left a tree nobody may use: not fixed (no verdict), the tree goes below.
        if (!(e instanceof WorktreeWithheldError)) throw e;
        deps.progress(`ground truth: failed: ${e.message}`);
      }
    }
    return { applied: applied.applied, conflicts: applied.conflicts, verdict };
  } finally {
    await cells.cleanUp(gtWt);
  }
}

/** Fixed: a winner whose diff applied to a fresh checkout and passed there. */
export function isFixed(winner: CandidateGroup | null, groundTruth: FixReport['ground_truth']): boolean {
  return Boolean(winner && groundTruth?.applied && groundTruth.verdict?.green);
}
