import * as vscode from 'vscode';
import type { ForgeState, InstanceRow } from '../forgeState.js';
import { instanceView } from './presentation.js';
import { toTreeItem } from './treeItem.js';

/** Instances view: durable instances from the operation ledger's inventory. */
export class InstancesTreeProvider implements vscode.TreeDataProvider<InstanceRow> {
  private readonly changed = new vscode.EventEmitter<InstanceRow | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly state: ForgeState) {
    state.onChange((what) => {
      if (what === 'instances') this.changed.fire(undefined);
    });
  }

  getChildren(node?: InstanceRow): InstanceRow[] {
    return node ? [] : this.state.instances;
  }

  getTreeItem(row: InstanceRow): vscode.TreeItem {
    const item = toTreeItem(instanceView(row), vscode.TreeItemCollapsibleState.None, `instance:${row.instance_id}`);
    item.command = { command: 'forge.openInstanceDetails', title: 'Open Instance Details', arguments: [row] };
    return item;
  }
}
