import * as vscode from 'vscode';
import type { NotificationHub } from '../notificationHub.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { ProgressDigest } from './progressDigest.js';
import type { RunEnding } from './runEnding.js';

export interface FollowRunDeps {
  runner: RunnerConnection;
  hub: NotificationHub;
  /** The run Cancel acts on (forge.runActive), null once it has finished. */
  setRunActive: (runId: string | null) => void;
}

/** The forge.runActive context key: Cancel Run shows in the palette and the Attempts title while a run is followed. */
export function setRunActiveContext(runId: string | null): void {
  void vscode.commands.executeCommand('setContext', 'forge.runActive', runId !== null);
}

/**
 * Shows a started (or resumed) run as a cancellable progress notification until the runner
 * says it finished, and resolves with how it ended; the caller says what that means to the user.
 */
export async function followRun(deps: FollowRunDeps, runId: string, title: string): Promise<RunEnding> {
  deps.setRunActive(runId);
  return Promise.resolve(
    vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (progress, token) =>
        new Promise<RunEnding>((resolve) => {
          const digest = new ProgressDigest();
          const subs = [
            deps.hub.on('fix/progress', (p: { run_id: string; line: string }) => {
              if (p.run_id === runId) progress.report({ message: digest.add(p.line) });
            }),
            deps.hub.on('fix/finished', (p: { run_id: string; status: string; error: string | null }) => {
              if (p.run_id !== runId) return;
              for (const s of subs) s.dispose();
              resolve(p);
            }),
          ];
          token.onCancellationRequested(() => {
            progress.report({ message: 'cancelling: stopping the cells…' });
            void deps.runner.request('fix/cancel', { run_id: runId });
          });
        }),
    ),
  ).finally(() => deps.setRunActive(null));
}
