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
import { fingerprints } from './treeInputs.js';
import { sameInputs } from './verdictReuse.js';
import type { AttemptResult } from './fixRun.js';

export interface GroundTruthInput extends RunScope {
  cells: RunCells;
  /** The selected winner; null when no attempt was green (then there is nothing to check). */
  winner: CandidateGroup | null;
  baselineReport: Judged | null;
  /** The attempts' results: what the winner's verdict run read, when it was its worktree's first cell. */
  results?: readonly AttemptResult[];
}

/**
 * Phase 4, ground truth: the winner's diff on a fresh checkout of the base, in a fresh cell.
 * What passed in the attempt's own worktree must pass from the patch alone.
 */
export async function checkGroundTruth({
  run,
  deps,
  cells,
  winner,
  baselineReport,
  results = [],
}: GroundTruthInput): Promise<FixReport['ground_truth']> {
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
    // The winner's verdict already ran on exactly this tree: the first cell in its worktree
    // (a fresh checkout of the base, as this one) read, at every path its patch changes, the
    // bytes this checkout holds now (each file compared, executable bit included; .gitattributes
    // or a filter that made them differ would show). Running it again would only repeat it.
    const ran = results.find((r) => r.attemptId === winner.attempts[0])?.verdictInputs;
    const same =
      applied.applied && !baseTests && ran
        ? (() => {
            const paths = [...ran.inputs.keys()];
            const fresh = fingerprints(gtWt.path, paths);
            return fresh !== null && sameInputs(ran.inputs, fresh, paths);
          })()
        : false;
    if (same && ran) {
      deps.progress(
        `ground truth: attempt ${index}'s run_tests (turn ${ran.turn + 1}) was the first cell in its worktree and read exactly the bytes this fresh checkout with its patch holds: taken, not run twice`,
      );
      return {
        applied: true,
        conflicts: [],
        verdict: { ...winner.verdict, reused_from: `attempt ${index}'s run_tests (turn ${ran.turn + 1}), on the same bytes` },
      };
    }
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
