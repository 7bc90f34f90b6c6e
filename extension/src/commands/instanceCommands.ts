import * as vscode from 'vscode';
import type { ForgeState, InstanceRow } from '../forgeState.js';
import { DetailsPanel } from '../panels/detailsPanel.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { ViewRefresh } from '../viewRefresh.js';

/** forge.reconcileInstance: the row's instance, else one picked; says where it settled. */
export function reconcileInstanceCommand(deps: { runner: RunnerConnection; state: ForgeState; refresh: ViewRefresh }) {
  return async (row?: InstanceRow): Promise<void> => {
    const id =
      row?.instance_id ??
      (await vscode.window.showQuickPick(
        deps.state.instances.map((i) => i.instance_id),
        { placeHolder: 'Instance to reconcile' },
      ));
    if (!id) return;
    const r = await deps.runner.request('instances/reconcile', { instance_id: id });
    void vscode.window.showInformationMessage(
      `Forge: ${id} is ${r.state} (${r.classes.join(', ') || 'converged'})${r.settled ? '' : '; still settling'}.`,
    );
    await deps.refresh.instances();
  };
}

/** forge.openInstanceDetails: the row's status and evidence in a details panel. */
export function openInstanceDetailsCommand(deps: { runner: RunnerConnection; extensionUri: vscode.Uri }) {
  return async (row?: InstanceRow): Promise<void> => {
    if (!row) return;
    const [status, history] = await Promise.all([
      deps.runner.request('instances/status', { instance_id: row.instance_id }),
      deps.runner.request('instances/history', { instance_id: row.instance_id, limit: 200 }),
    ]);
    DetailsPanel.show(deps.extensionUri, `instance:${row.instance_id}`, `Instance ${row.instance_id}`, {
      kind: 'instance',
      data: { status, history },
    });
  };
}

/** forge.openInstancesGuide: docs/instances.md (shipped in the VSIX) as a rendered preview, from the Instances view's empty state. */
export function openInstancesGuideCommand(deps: { extensionUri: vscode.Uri }) {
  return async (): Promise<void> => {
    await vscode.commands.executeCommand('markdown.showPreview', vscode.Uri.joinPath(deps.extensionUri, 'docs', 'instances.md'));
  };
}
