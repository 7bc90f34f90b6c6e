import type * as vscode from 'vscode';
import type { ForgeState } from './forgeState.js';
import type { RunnerConnection } from './runner/runnerConnection.js';
import type { CellsStatusBar } from './statusBar.js';

/** Reads what the views show from the runner (its store) into ForgeState, for a (re)start, a command or a notification. */
export class ViewRefresh {
  constructor(
    private readonly deps: { runner: RunnerConnection; state: ForgeState; status: CellsStatusBar; log: vscode.LogOutputChannel },
  ) {}

  async loadRun(runId: string): Promise<void> {
    this.deps.state.putSnapshot(await this.deps.runner.request('runs/show', { run_id: runId }));
  }

  async health(): Promise<void> {
    this.deps.state.setHealth(await this.deps.runner.request('cells/health', {}));
    this.deps.status.update();
  }

  async instances(): Promise<void> {
    this.deps.state.setInstances(await this.deps.runner.request('instances/list', {}));
  }

  /** After a (re)start: everything from the store. */
  async all(): Promise<void> {
    const { runner, state, log } = this.deps;
    try {
      state.setRuns(await runner.request('runs/list', { limit: 20 }));
      const newest = state.runs[0];
      if (newest) await this.loadRun(newest.run_id);
      await this.instances();
      await this.health();
    } catch (e) {
      log.warn(`refresh failed: ${(e as Error).message}`);
    }
  }
}
