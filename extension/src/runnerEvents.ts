import * as vscode from 'vscode';
import type { CellSnapshot, RunSnapshot } from '../../runner/src/protocol/rpcFix.js';
import type { ForgeState } from './forgeState.js';
import type { NotificationHub } from './notificationHub.js';
import type { AttemptDetails } from './panels/attemptDetails.js';
import type { RunnerConnection, RunnerEvents } from './runner/runnerConnection.js';
import type { CellsStatusBar } from './statusBar.js';
import type { ViewRefresh } from './viewRefresh.js';

/** What the runner's events update. */
export interface RunnerEventDeps {
  runner: RunnerConnection;
  log: vscode.LogOutputChannel;
  state: ForgeState;
  hub: NotificationHub;
  status: CellsStatusBar;
  refresh: ViewRefresh;
  attemptDetails: AttemptDetails;
}

/**
 * Whether the "runner crashed, restarting" warning was shown since the runner was last
 * healthy for a minute: a crash loop shows one warning, not one per crash.
 */
export class CrashWarningLatch {
  private shown = false;
  private healthyTimer: NodeJS.Timeout | undefined;

  get warned(): boolean {
    return this.shown;
  }

  /** The runner is ready: after a minute without a crash, the next crash warns again. */
  ready(): void {
    this.healthyTimer = setTimeout(() => (this.shown = false), 60_000);
  }

  crashed(): void {
    clearTimeout(this.healthyTimer);
  }

  /** True once per crash loop: the caller shows the warning. */
  claimWarning(): boolean {
    if (this.shown) return false;
    this.shown = true;
    return true;
  }
}

/**
 * The runner's state changes, crashes and notifications -> the views, the status bar, open
 * panels, the log and the NotificationHub (for the fix flow). `deps` is read when an event
 * arrives: the views are built around the connection these events are handed to.
 */
export function runnerEvents(deps: () => RunnerEventDeps, crashWarning = new CrashWarningLatch()): RunnerEvents {
  return {
    state: (s, detail) => {
      const { runner, log, status, refresh } = deps();
      status.update();
      if (s === 'ready') {
        crashWarning.ready();
        void refresh.all();
      } else if (s === 'down' && detail && !crashWarning.warned && runner.pid === null) {
        log.error(detail);
      }
    },
    crash: (detail, restarting, delayMs) => {
      const { log } = deps();
      crashWarning.crashed();
      log.error(`${detail}${restarting ? `; restarting in ${delayMs} ms` : '; not restarting'}`);
      if (!restarting) {
        void vscode.window
          .showErrorMessage(`Forge: ${detail}. It kept crashing, so it was not restarted.`, 'Restart Runner', 'Show Log')
          .then((c) => {
            if (c === 'Restart Runner') void vscode.commands.executeCommand('forge.restartRunner');
            if (c === 'Show Log') log.show();
          });
      } else if (crashWarning.claimWarning()) {
        void vscode.window
          .showWarningMessage(`Forge: ${detail}. Restarting it; the views show what the store recorded.`, 'Show Log')
          .then((c) => c && log.show());
      }
    },
    notification: (method, params) => {
      const { state, hub, status, refresh, attemptDetails } = deps();
      if (method === 'runs/changed') {
        state.putSnapshot(params as RunSnapshot);
        attemptDetails.refreshOpen(params as RunSnapshot);
      } else if (method === 'cells/changed') {
        state.setRunning((params as { running: CellSnapshot[] }).running);
        status.update();
      } else if (method === 'instances/changed') {
        void refresh.instances();
      } else if (method === 'fix/progress') {
        // Every run's progress (started here, resumed, or seen after a restart) in the Output channel.
        const p = params as { run_id: string; line: string };
        deps().log.info(`[${p.run_id}] ${p.line}`);
      } else if (method === 'fix/finished') {
        void refresh.health();
      }
      hub.dispatch(method, params);
    },
    log: (line) => deps().log.info(line),
  };
}
