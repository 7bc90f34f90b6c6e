import * as vscode from 'vscode';
import type { ForgeState } from './forgeState.js';
import type { RunnerConnection } from './runner/runnerConnection.js';
import type { ForgeSettings } from './settings.js';
import { formatStatus } from './statusText.js';

/** The status bar item: the chosen provider and model, cells running, what is wrong (statusText); a click shows the health document. */
export class CellsStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor(private readonly deps: { state: ForgeState; runner: RunnerConnection; settings: () => ForgeSettings }) {
    this.item = vscode.window.createStatusBarItem('forge.cells', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Forge Cells';
    this.item.command = 'forge.showCellHealth';
    this.item.show();
  }

  update(): void {
    const { state, runner, settings } = this.deps;
    const { provider, model } = settings();
    const view = formatStatus({ health: state.health, running: state.running.length, provider, model, runnerState: runner.state });
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.degraded ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
