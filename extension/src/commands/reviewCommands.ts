import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { ReviewController } from '../review/reviewController.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { AttemptsNode } from '../views/attemptsView.js';

/** The run a node of the Attempts view belongs to (undefined from the palette or the editor title). */
export const runIdOf = (node?: AttemptsNode): string | undefined =>
  node ? (node.kind === 'run' ? node.run.run_id : node.runId) : undefined;

/** forge.reviewWinner, forge.applyWinner, forge.discardAttempts: on the node's run, else the one under review or waiting for it. */
export function reviewCommands(deps: { review: ReviewController }) {
  return {
    reviewWinner: (node?: AttemptsNode) => deps.review.open(runIdOf(node)),
    applyWinner: (node?: AttemptsNode) => deps.review.apply(runIdOf(node)),
    discardAttempts: (node?: AttemptsNode) => deps.review.discard(runIdOf(node)),
  };
}

/** forge.cancelRun: the node's run, else the run in progress. */
export function cancelRunCommand(deps: { runner: RunnerConnection; state: ForgeState }) {
  return async (node?: AttemptsNode): Promise<void> => {
    const id = runIdOf(node) ?? deps.state.runs.find((r) => r.status === 'running')?.run_id;
    if (!id) return void vscode.window.showInformationMessage('Forge: no run in progress.');
    const r = await deps.runner.request('fix/cancel', { run_id: id });
    if (!r.cancelled) void vscode.window.showInformationMessage(`Forge: run ${id} is not in progress in this runner.`);
  };
}
