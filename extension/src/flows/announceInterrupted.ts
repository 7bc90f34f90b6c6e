import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import { shortTitle } from '../views/runTitle.js';

const SEEN_KEY = 'forge.announcedInterruptedRuns';
/** A run interrupted longer ago than this is not news when a window opens. */
const RECENT_MS = 24 * 60 * 60 * 1000;

/**
 * When the window opens (the runs are first listed): each run of its repositories that was
 * interrupted (the window closed, or the runner died, while it ran) and was not said yet is
 * said once, with Resume. Remembered per workspace, so a reload does not say it again.
 */
export function announceInterruptedRuns(state: ForgeState, seen: vscode.Memento, now: () => number = Date.now): vscode.Disposable {
  let done = false;
  return state.onChange((what) => {
    if (what !== 'runs' || done) return;
    done = true;
    const said = new Set(seen.get<string[]>(SEEN_KEY, []));
    const fresh = state.runs.filter(
      (r) => r.status === 'interrupted' && state.inScope(r) && !said.has(r.run_id) && now() - Date.parse(r.updated_at) < RECENT_MS,
    );
    if (fresh.length === 0) return;
    void seen.update(SEEN_KEY, [...said, ...fresh.map((r) => r.run_id)].slice(-200));
    for (const r of fresh.slice(0, 3)) {
      void vscode.window
        .showWarningMessage(
          `Forge: "${shortTitle(r.issue_title, 50)}" was interrupted: its runner stopped while it ran (the window closed). Resume goes on from the attempts that finished.`,
          'Resume',
          'Show Attempts',
        )
        .then((choice) => {
          if (choice === 'Resume') void vscode.commands.executeCommand('forge.resumeRun', { kind: 'run', run: r });
          else if (choice === 'Show Attempts') void vscode.commands.executeCommand('forge.attempts.focus');
        });
    }
  });
}
