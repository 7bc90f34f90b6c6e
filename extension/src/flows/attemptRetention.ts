import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';

/** forge.attemptRetentionDays as days (default 3); 0 turns the offer off. */
export function retentionDays(): number {
  const v = vscode.workspace.getConfiguration('forge').get<number>('attemptRetentionDays', 3);
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 3;
}

/** The threshold the command uses: the retention, or the default 3 days when the offer is off (0). */
export function olderThanSeconds(days: number): number {
  return Math.max(1, Math.round((days > 0 ? days : 3) * 86_400));
}

/** "3d 4h", "5h", "12m", "9s". */
export function ageText(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  return m > 0 ? `${m}m` : `${Math.floor(seconds)}s`;
}

/**
 * Once per window, after the runner first lists the runs (so activation does no work for it):
 * when runs have attempts left unreviewed beyond the retention, one non-modal notification
 * offers the list. It never removes anything itself.
 */
export function offerOldAttempts(state: ForgeState, runner: RunnerConnection, log: vscode.LogOutputChannel): vscode.Disposable {
  let done = false;
  return state.onChange((what) => {
    if (what !== 'runs' || done) return;
    done = true;
    const days = retentionDays();
    if (days <= 0) return;
    void runner
      .request('runs/old', { older_than_s: olderThanSeconds(days) })
      .then((found) => {
        if (found.runs.length === 0) return;
        const n = found.runs.length;
        const branches = found.runs.reduce((s, r) => s + r.branches.length, 0);
        return vscode.window
          .showInformationMessage(
            `Forge: ${n} run${n === 1 ? '' : 's'} not reviewed for more than ${ageText(olderThanSeconds(days))} still ${n === 1 ? 'has' : 'have'} ${branches} forge/attempt branch${branches === 1 ? '' : 'es'}.`,
            'Review List',
          )
          .then((choice) => {
            if (choice === 'Review List') void vscode.commands.executeCommand('forge.discardOldAttempts');
          });
      })
      .catch((e: Error) => log.warn(`old attempts not checked: ${e.message}`));
  });
}
