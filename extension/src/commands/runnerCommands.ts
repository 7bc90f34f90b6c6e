import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { HealthDocument } from '../healthDocument.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { ForgeSettings } from '../settings.js';
import type { ViewRefresh } from '../viewRefresh.js';

/** forge.showCellHealth: providers checked now, as a read-only document. */
export function showCellHealthCommand(deps: {
  state: ForgeState;
  health: HealthDocument;
  refresh: ViewRefresh;
  settings: () => ForgeSettings;
}) {
  return async (): Promise<void> => {
    await deps.refresh.health();
    await deps.health.show(deps.state.health!, deps.state.running.length, deps.settings().provider);
  };
}

/** forge.gc: removes what runs of the workspace repository left behind (cells/gc); says what went and what stayed. */
export function gcCommand(deps: { runner: RunnerConnection; log: vscode.LogOutputChannel }) {
  return async (): Promise<void> => {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) return void vscode.window.showErrorMessage('Forge: open a repository folder first.');
    const r = await deps.runner.request('cells/gc', { repo: folder.uri.fsPath });
    const removed = r.items.filter((i) => i.action !== 'left');
    deps.log.info(`gc: ${JSON.stringify(r)}`);
    void vscode.window.showInformationMessage(
      `Forge: removed ${removed.length} leftover(s)${removed.length ? `: ${removed.map((i) => `${i.kind} ${i.id}`).join(', ')}` : ''}; ${r.items.length - removed.length} left.${r.notes.length ? ` ${r.notes.join('; ')}` : ''}`,
    );
  };
}

/** forge.refresh: the views from the runner's store. */
export function refreshCommand(deps: { refresh: ViewRefresh }) {
  return (): Promise<void> => deps.refresh.all();
}

/** forge.restartRunner. */
export function restartRunnerCommand(deps: { runner: RunnerConnection }) {
  return async (): Promise<void> => {
    await deps.runner.restart();
    void vscode.window.showInformationMessage('Forge: runner restarted.');
  };
}
