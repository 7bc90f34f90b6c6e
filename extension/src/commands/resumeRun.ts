import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import { followRun, setRunActiveContext } from '../flows/followRun.js';
import { announceRunEnd } from '../flows/announceRunEnd.js';
import type { NotificationHub } from '../notificationHub.js';
import type { ReviewController } from '../review/reviewController.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { AttemptsNode } from '../views/attemptsView.js';
import { shortTitle } from '../views/runTitle.js';
import { runIdOf } from './reviewCommands.js';

export interface ResumeRunDeps {
  runner: RunnerConnection;
  hub: NotificationHub;
  state: ForgeState;
  review: ReviewController;
  log: vscode.LogOutputChannel;
}

/**
 * forge.resumeRun: continues the row's cancelled or interrupted run in the runner (finished
 * attempts kept, the rest redone) and follows it like Fix Issue in Cells. From the palette it
 * acts only on the newest run, so an old run is never resumed by surprise.
 */
export function resumeRunCommand(deps: ResumeRunDeps) {
  return async (node?: AttemptsNode): Promise<void> => {
    const id = runIdOf(node) ?? deps.state.resumableRun?.run_id;
    if (!id) return void vscode.window.showInformationMessage('Forge: the newest run was not cancelled or interrupted; nothing to resume.');
    await deps.runner.request('fix/resume', { run_id: id });
    const issue = deps.state.runs.find((r) => r.run_id === id)?.issue_title;
    const title = issue ? `"${shortTitle(issue, 50)}"` : id;
    const ending = await followRun(
      { runner: deps.runner, hub: deps.hub, setRunActive: setRunActiveContext },
      id,
      `Forge: resuming ${title}`,
    );
    // The same ending as a fresh run's: what happened, with buttons that act on it.
    await announceRunEnd(
      {
        runner: deps.runner,
        log: deps.log,
        review: (r) => deps.review.open(r),
        apply: (r) => deps.review.apply(r),
        discard: (r) => deps.review.discard(r),
      },
      id,
      ending,
    );
  };
}

/**
 * Keeps `forge.canResume` (the palette's Resume Run) true while the newest run can be resumed;
 * set only when it changes, as runs/changed arrives many times a second during a run.
 */
export function trackResumable(state: ForgeState): { dispose(): void } {
  let shown: boolean | null = null;
  const update = () => {
    const now = state.resumableRun !== undefined;
    if (now === shown) return;
    shown = now;
    void vscode.commands.executeCommand('setContext', 'forge.canResume', now);
  };
  update();
  return state.onChange((what) => {
    if (what === 'runs') update();
  });
}
