import * as vscode from 'vscode';
import type { CellSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import type { ForgeState } from '../forgeState.js';
import type { AttemptDetails } from '../panels/attemptDetails.js';
import { logUriParts } from '../review/reviewUris.js';
import type { AttemptsNode } from '../views/attemptsView.js';
import { cellLogName } from '../views/humanNames.js';

/** forge.openAttemptDetails: the node's attempt, else the newest run's winner (or its first attempt). */
export function openAttemptDetailsCommand(deps: { state: ForgeState; attemptDetails: AttemptDetails }) {
  return async (node?: AttemptsNode): Promise<void> => {
    const target = node?.kind === 'attempt' ? node : undefined;
    const runId = target?.runId ?? deps.state.currentRun?.run_id;
    const snap = runId ? deps.state.snapshots.get(runId) : undefined;
    const index = target?.attempt.index ?? snap?.attempts.find((a) => a.winner)?.index ?? snap?.attempts[0]?.index;
    if (!runId || index === undefined) return void vscode.window.showInformationMessage('Forge: no attempt to show yet.');
    await deps.attemptDetails.show(runId, index);
  };
}

/**
 * forge.openCellLog: a finished cell's bounded log as a read-only document (from the Cells
 * view), scrolled to the first line that shows `at` (a failing test's name, the crash) when given.
 */
export function openCellLogCommand() {
  return async (cell?: CellSnapshot, at?: readonly string[]): Promise<void> => {
    if (!cell) return;
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.from(logUriParts(cell.run_id, cell.cell_id, cellLogName(cell))));
    const line = findCause(doc.getText(), at ?? []);
    const selection = line === null ? undefined : new vscode.Range(line, 0, line, doc.lineAt(line).text.length);
    await vscode.window.showTextDocument(doc, { preview: true, ...(selection ? { selection } : {}) });
  };
}

/** Pure: the first line holding any of `needles` (the causes' words), or null. */
export function findCause(text: string, needles: readonly string[]): number | null {
  const lines = text.split('\n');
  for (const needle of needles.filter((n) => n.trim() !== '')) {
    const i = lines.findIndex((l) => l.includes(needle));
    if (i >= 0) return i;
  }
  return null;
}
