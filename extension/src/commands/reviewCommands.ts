import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { ReviewController } from '../review/reviewController.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { AttemptsNode } from '../views/attemptsView.js';
import { runInWordsNow } from '../views/humanNames.js';

/** The run a node of the Attempts view belongs to (undefined from the palette or the editor title). */
export const runIdOf = (node?: AttemptsNode): string | undefined =>
  node ? (node.kind === 'run' ? node.run.run_id : node.runId) : undefined;

/** forge.reviewWinner, forge.applyWinner, forge.discardAttempts: on the node's run, else the one under review or waiting for it. */
export function reviewCommands(deps: { review: ReviewController }) {
  const attemptOf = (node?: AttemptsNode) => (node?.kind === 'attempt' ? node : undefined);
  return {
    reviewWinner: (node?: AttemptsNode) => deps.review.open(runIdOf(node)),
    applyWinner: (node?: AttemptsNode) => deps.review.apply(runIdOf(node)),
    discardAttempts: (node?: AttemptsNode) => deps.review.discard(runIdOf(node)),
    /** forge.viewAttemptDiff: any finished attempt's change against the base (context menu of an attempt). */
    viewAttemptDiff: async (node?: AttemptsNode) => {
      const a = attemptOf(node);
      if (!a) return void vscode.window.showInformationMessage('Forge: pick an attempt in the Attempts view.');
      await deps.review.open(a.runId, a.attempt.index);
    },
    /** forge.compareWithWinner: the attempt's change next to the winner's. */
    compareWithWinner: async (node?: AttemptsNode) => {
      const a = attemptOf(node);
      if (!a) return void vscode.window.showInformationMessage('Forge: pick an attempt in the Attempts view.');
      await deps.review.compareWithWinner(a.runId, a.attempt.index);
    },
    /** forge.applyAttempt: this attempt's change (the node's, else the one under review) into the working tree; asks when it is not the winner. */
    applyAttempt: async (node?: AttemptsNode) => {
      const a = attemptOf(node);
      const target = a ? { runId: a.runId, attempt: a.attempt.index } : deps.review.reviewedAttempt;
      if (!target) return void vscode.window.showInformationMessage('Forge: pick an attempt in the Attempts view.');
      await deps.review.apply(target.runId, target.attempt);
    },
    /** forge.applyPartOfAttempt: chosen hunks of the node's attempt (else the one under review, else the winner). */
    applyPartOfAttempt: async (node?: AttemptsNode) => {
      const a = attemptOf(node);
      await deps.review.applyPart(a ? a.runId : runIdOf(node), a?.attempt.index);
    },
    /** forge.undoApply: puts back what the checkout held before the newest apply. */
    undoApply: (node?: AttemptsNode) => deps.review.undoApply(runIdOf(node)),
  };
}

/** forge.cancelRun: the node's run, else the run in progress. */
export function cancelRunCommand(deps: { runner: RunnerConnection; state: ForgeState }) {
  return async (node?: AttemptsNode): Promise<void> => {
    const id = runIdOf(node) ?? deps.state.runs.find((r) => r.status === 'running')?.run_id;
    if (!id) return void vscode.window.showInformationMessage('Forge: no run in progress.');
    const r = await deps.runner.request('fix/cancel', { run_id: id });
    const run = deps.state.runs.find((x) => x.run_id === id);
    if (!r.cancelled)
      void vscode.window.showInformationMessage(`Forge: ${run ? runInWordsNow(run) : 'that run'} is not in progress in this runner.`);
  };
}

/**
 * Keeps `forge.hasReviewable` (Review/Apply/Discard in the palette) true only while a winner
 * of this window's repositories waits for review; set only when it changes.
 */
export function trackReviewable(state: ForgeState): { dispose(): void } {
  let shown: boolean | null = null;
  const update = () => {
    const now = state.reviewableRun !== undefined;
    if (now === shown) return;
    shown = now;
    void vscode.commands.executeCommand('setContext', 'forge.hasReviewable', now);
  };
  update();
  return state.onChange((what) => {
    if (what === 'runs') update();
  });
}
