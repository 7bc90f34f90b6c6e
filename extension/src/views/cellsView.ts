import * as vscode from 'vscode';
import type { CellSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import type { ForgeState } from '../forgeState.js';
import { labelInWords } from './humanNames.js';
import { cellView } from './presentation.js';
import { toTreeItem } from './treeItem.js';

/** Cells view: the cells of the newest run (running ones first), each opening its bounded log. */
export class CellsTreeProvider implements vscode.TreeDataProvider<CellSnapshot> {
  private readonly changed = new vscode.EventEmitter<CellSnapshot | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly state: ForgeState) {
    state.onChange((what) => {
      if (what === 'cells' || what === 'runs') this.changed.fire(undefined);
    });
  }

  getChildren(node?: CellSnapshot): CellSnapshot[] {
    if (node) return [];
    const run = this.state.currentRun;
    const stored = run ? (this.state.snapshots.get(run.run_id)?.cells ?? []).filter((c) => !c.running) : [];
    const running = this.state.running;
    return [...running, ...stored.slice().reverse()];
  }

  getTreeItem(cell: CellSnapshot): vscode.TreeItem {
    const item = toTreeItem(
      labelInWords(cellView(cell), cell.purpose),
      vscode.TreeItemCollapsibleState.None,
      `cell:${cell.run_id}:${cell.cell_id}`,
    );
    if (!cell.running) item.command = { command: 'forge.openCellLog', title: 'Open Cell Log', arguments: [cell] };
    return item;
  }
}
