import * as vscode from 'vscode';
import type { AttemptSnapshot, RunSummary } from '../../../runner/src/protocol/rpcFix.js';
import type { ForgeState } from '../forgeState.js';
import { attemptView, runView } from './presentation.js';
import { toTreeItem } from './treeItem.js';
import { attemptsScope } from '../workspaceScope.js';

export type AttemptsNode = { kind: 'run'; run: RunSummary } | { kind: 'attempt'; runId: string; attempt: AttemptSnapshot };

/** Attempts view: recent runs, each with its attempts (queued / running / green / red / winner). */
export class AttemptsTreeProvider implements vscode.TreeDataProvider<AttemptsNode> {
  private readonly changed = new vscode.EventEmitter<AttemptsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(
    private readonly state: ForgeState,
    private readonly loadRun: (runId: string) => void,
  ) {
    state.onChange((what) => {
      if (what === 'runs') this.changed.fire(undefined);
    });
  }

  getChildren(node?: AttemptsNode): AttemptsNode[] {
    if (!node) return this.state.visibleRuns.slice(0, 20).map((run) => ({ kind: 'run', run }));
    if (node.kind === 'attempt') return [];
    const snap = this.state.snapshots.get(node.run.run_id);
    if (!snap) {
      this.loadRun(node.run.run_id);
      return [];
    }
    return snap.attempts.map((attempt) => ({ kind: 'attempt', runId: node.run.run_id, attempt }));
  }

  getTreeItem(node: AttemptsNode): vscode.TreeItem {
    if (node.kind === 'run') {
      const newest = this.state.visibleRuns[0]?.run_id === node.run.run_id;
      return toTreeItem(
        runView(node.run, undefined, undefined, this.state.snapshots.get(node.run.run_id)?.usage),
        newest ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
        `run:${node.run.run_id}`,
      );
    }
    const run = this.state.runs.find((r) => r.run_id === node.runId);
    const closed = run?.review === 'applied' || run?.review === 'discarded';
    const item = toTreeItem(
      attemptView(node.attempt, run?.winner_attempt != null, closed),
      vscode.TreeItemCollapsibleState.None,
      `attempt:${node.runId}:${node.attempt.index}`,
    );
    item.command = { command: 'forge.openAttemptDetails', title: 'Open Attempt Details', arguments: [node] };
    return item;
  }
}

/** Keeps the view's message and the forge.showAllRuns / forge.onlyHiddenRuns contexts in step with the state. */
export function bindAttemptsScope(view: vscode.TreeView<AttemptsNode>, state: ForgeState): vscode.Disposable {
  let shown: string | undefined;
  const update = () => {
    const scope = attemptsScope(state.visibleRuns.length, state.hiddenRuns, state.showAll);
    // Set only on a change: a message once set and then cleared may keep the welcome away.
    if (scope.message !== shown) view.message = shown = scope.message;
    void vscode.commands.executeCommand('setContext', 'forge.showAllRuns', state.showAll);
    void vscode.commands.executeCommand('setContext', 'forge.onlyHiddenRuns', scope.hiddenOnly);
  };
  update();
  return state.onChange((what) => what === 'runs' && update());
}
