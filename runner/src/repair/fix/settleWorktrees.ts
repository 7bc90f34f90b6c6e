import { applyPatch } from '../../workspace/applyPatch.js';
import { commitAttempt, createAttemptWorktree, locateRepository } from '../../workspace/attemptWorktree.js';
import { repoTarget } from '../../workspace/repoLocation.js';
import { applyToWorkspace } from '../../workspace/reviewWinner.js';
import { runGit } from '../../workspace/safeGit.js';
import type { CandidateGroup } from '../selectWinner.js';
import { isBudgetStop } from '../usage/usageAccounting.js';
import type { AttemptResult, RunScope } from './fixRun.js';
import type { RunCells } from './runCells.js';

export interface SettleInput extends RunScope {
  cells: RunCells;
  results: AttemptResult[];
  winner: CandidateGroup | null;
  /** The winner passed ground truth: only then is anything kept or applied. */
  fixed: boolean;
}

export interface Settled {
  /** The winning attempt's result (undefined when nothing was selected). */
  winnerResult: AttemptResult | undefined;
  /** forge/attempt/<id> holding the winner's commit; null unless fixed. */
  winnerBranch: string | null;
  /** Where the winner went beyond its branch (--branch, --apply); null: nowhere. */
  appliedTo: string | null;
}

/**
 * Phase 5, settle worktrees: keep the winner on its branch; every other worktree goes. The
 * user's branch or working tree change only when the request says so (branch, apply).
 */
export async function settleWorktrees({ run, request, deps, cells, results, winner, fixed }: SettleInput): Promise<Settled> {
  let winnerBranch: string | null = null;
  let appliedTo: string | null = null;
  const winnerResult = winner ? results.find((r) => r.attemptId === winner.attempts[0]) : undefined;
  if (fixed && winnerResult && !winnerResult.wt) {
    // A winner kept from before a resume may have lost its worktree: rebuilt from its patch.
    const rebuilt = await createAttemptWorktree(run.repo, run.base, winnerResult.attemptId);
    await applyPatch(rebuilt, winnerResult.patch);
    winnerResult.wt = rebuilt;
  }
  for (const r of results) {
    if (!r.wt) continue;
    if (fixed && r === winnerResult) {
      await commitAttempt(r.wt, `forge: fix from attempt ${r.index} of ${run.runId}`);
      await cells.cleanUp(r.wt, { keepBranch: true });
      winnerBranch = r.wt.branch;
    } else if (isBudgetStop(r.outcome?.stop) && !r.error && r.patch.length > 0) {
      // Stopped by its token budget, not by a verdict on its idea: its work stays on its branch
      // (forge/attempt/<id>) to review or go on from, besides its patch in the store.
      const kept = await commitAttempt(r.wt, `forge: attempt ${r.index} of ${run.runId}, stopped by its token budget`).then(
        () => true,
        (e: Error) => (
          deps.progress(`attempt ${r.index}: its work could not be kept on a branch (${e.message}); its patch is in the run`),
          false
        ),
      );
      await cells.cleanUp(r.wt, { keepBranch: kept });
      if (kept) deps.progress(`attempt ${r.index}: stopped by its budget; its work is kept on ${r.wt.branch}`);
    } else {
      await cells.cleanUp(r.wt);
    }
  }
  if (fixed && winnerBranch && request.branch) {
    await runGit(repoTarget(await locateRepository(run.repo)), ['branch', '--end-of-options', request.branch, winnerBranch]);
    appliedTo = `branch ${request.branch}`;
  }
  if (fixed && winner && request.apply) {
    // All or nothing: the user's tree is never left half-changed.
    const outcome = (await applyToWorkspace(run.repo, winner.patch)).applied;
    appliedTo = outcome ? `working tree of ${run.repo}` : appliedTo;
    if (!outcome) deps.progress('apply: the winner does not apply cleanly to your working tree; it stays on its branch');
  }
  return { winnerResult, winnerBranch, appliedTo };
}
