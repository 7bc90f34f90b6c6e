import { join } from 'node:path';
import * as vscode from 'vscode';
import type { RpcFixResult } from '../../../runner/src/protocol/rpcFix.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { runNameNow } from '../views/humanNames.js';
import { reviewUriParts } from './reviewUris.js';

type ApplyResult = RpcFixResult<'review/apply'>;

/** The run whose newest apply can be undone (Forge: Undo Apply); one at a time, the newest. */
let undoable: { runId: string; undoId: string } | null = null;

async function setUndoable(next: typeof undoable): Promise<void> {
  undoable = next;
  await vscode.commands.executeCommand('setContext', 'forge.canUndoApply', next !== null);
}

/**
 * After an apply that merged with the user's edits: each file with conflicts (merged with the
 * user's lines kept where the two conflict: the apply asks for conflicts: 'yours') opens in
 * VS Code's merge editor (base = the run's base commit, "your checkout" = the saved copy of
 * what the file held, the side merged in = the attempt's file or what the chosen part makes of
 * the base, output = the file itself), and the message offers Undo Apply, which puts back
 * exactly the bytes the checkout held.
 */
export async function presentApplied(runner: RunnerConnection, runId: string, r: ApplyResult, message: string): Promise<void> {
  if (r.undo_id) await setUndoable({ runId, undoId: r.undo_id });
  const conflicts = r.conflicts ?? [];
  const merged = r.mode === 'three-way' || r.mode === 'conflicts';
  // The merge editor names the attempt's side by its run's issue and time, not the run's id.
  const runName = conflicts.length > 0 ? runNameNow((await runner.request('runs/show', { run_id: runId })).run) : '';
  for (const c of conflicts) await openMergeEditor(runId, r.attempt, r.repo, c.path, c.before, c.theirs, runName);
  const say =
    conflicts.length > 0
      ? `Forge: ${message} Where it conflicts with your edits (${conflicts.map((c) => c.path).join(', ')}) your lines are kept; to take the attempt's there, use "Accept Attempt ${r.attempt}" then "Remove Your checkout" in the merge editor, and save. Undo Apply puts every file back.`
      : merged
        ? `Forge: ${message} It was merged with your edits (${r.files
            .filter((f) => f.reason)
            .map((f) => f.path)
            .join(', ')}).`
        : `Forge: ${message}`;
  const show = conflicts.length > 0 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const offer = r.undo_id ? ['Undo Apply'] : [];
  void show(say, ...offer).then((choice) => {
    if (choice === 'Undo Apply') void undoApply(runner, runId, r.undo_id ?? undefined);
  });
}

/** The merge editors Forge opened, by the file they write (Undo Apply reverts them). */
const openedMerges = new Map<string, unknown>();

/** The built-in git extension's way in: the internal `_open.mergeEditor` command. */
export async function openMergeEditor(
  runId: string,
  attempt: number,
  repo: string,
  path: string,
  before: string,
  theirs: string | undefined,
  runName: string,
): Promise<void> {
  const review = (side: 'base' | 'attempt') => vscode.Uri.from(reviewUriParts({ runId, side, path, attempt }));
  const output = vscode.Uri.file(join(repo, path));
  const args = {
    base: review('base'),
    input1: { uri: vscode.Uri.file(before), title: 'Your checkout', description: 'before Forge applied', detail: path },
    // What was merged in (a part: only the chosen hunks), from an older runner the whole attempt.
    input2: {
      uri: theirs ? vscode.Uri.file(theirs) : review('attempt'),
      title: `Attempt ${attempt}`,
      description: runName ? `its change · ${runName}` : 'its change',
      detail: path,
    },
    output,
  };
  openedMerges.set(output.fsPath, args);
  await vscode.commands.executeCommand('_open.mergeEditor', args);
}

/** Forge: Undo Apply: the newest apply of the run (or of this window) is taken back. */
export async function undoApply(runner: RunnerConnection, runId?: string, undoId?: string): Promise<boolean> {
  const target = runId ? { runId, undoId } : undoable ? { runId: undoable.runId, undoId: undoable.undoId } : null;
  if (!target) {
    void vscode.window.showInformationMessage('Forge: no apply to undo in this window.');
    return false;
  }
  const choice = await vscode.window.showWarningMessage(
    'Undo the apply? Every file it wrote gets back exactly what it held before, edits made since in those files included.',
    { modal: true },
    'Undo Apply',
  );
  if (choice !== 'Undo Apply') return false;
  const r = await runner
    .request('review/undoApply', { run_id: target.runId, ...(target.undoId ? { undo_id: target.undoId } : {}) })
    .catch((e: Error) => {
      // An Undo Apply button of an apply already undone (the notification centre keeps them) says why it did nothing.
      void vscode.window.showErrorMessage(`Forge: ${e.message}`);
      return null;
    });
  if (!r) return false;
  // An earlier apply (a part applied before) is still in: Undo Apply stays offered for it.
  const still = r.still_applied ?? null;
  if (still) await setUndoable({ runId: target.runId, undoId: still.undo_id });
  else if (undoable?.runId === target.runId) await setUndoable(null);
  const run = (await runner.request('runs/show', { run_id: target.runId })).run;
  await settleEditors(r.restored.map((p) => join(run.repo, p)));
  const after = still
    ? ` An earlier apply of attempt ${still.attempt} is still in your checkout (${still.files.join(', ')}): Undo Apply again takes it back.`
    : r.review === 'pending'
      ? ' The run waits for review again.'
      : '';
  const offer = still ? ['Undo Apply'] : [];
  void vscode.window
    .showInformationMessage(`Forge: undone; restored ${r.restored.join(', ') || 'nothing'}.${after}`, ...offer)
    .then((c) => {
      if (c === 'Undo Apply' && still) void undoApply(runner, target.runId, still.undo_id);
    });
  return true;
}

/**
 * Editors on restored files must show the restored bytes, not keep (and later save) what the
 * merge editor computed: each merge editor Forge opened on one is brought forward and
 * reverted to the file on disk, then closed; any other unsaved editor of those files is
 * reverted too.
 */
async function settleEditors(files: string[]): Promise<void> {
  for (const file of files) {
    const args = openedMerges.get(file);
    if (!args) continue;
    openedMerges.delete(file);
    await vscode.commands.executeCommand('_open.mergeEditor', args);
    await vscode.commands.executeCommand('workbench.action.files.revert');
    // Reverted, its result is your file as it was: no conflict is left to ask about, so it closes.
    void vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  }
  const wanted = new Set(files);
  for (const doc of vscode.workspace.textDocuments) {
    if (doc.uri.scheme !== 'file' || !wanted.has(doc.uri.fsPath) || !doc.isDirty) continue;
    await vscode.window.showTextDocument(doc);
    await vscode.commands.executeCommand('workbench.action.files.revert');
  }
}
