import * as vscode from 'vscode';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { presentApplied } from './applyOutcome.js';
import { describePartOutcome, type HunkPick, hunkPicks, selectionOf } from './hunkPicks.js';
import { runNameNow } from '../views/humanNames.js';
import { reviewUriParts } from './reviewUris.js';

type Row = vscode.QuickPickItem & { pick: HunkPick };

/**
 * Forge: Apply Part of Attempt...: a QuickPick of the attempt's hunks grouped by file (a
 * separator per file), each with a button opening that file's diff at the hunk; the rows
 * picked go to review/apply as a selection, with the same checks as a whole apply. A part
 * never marks the run applied, so the user can come back for the rest.
 */
export async function applyPartOfAttempt(
  runner: RunnerConnection,
  target: { runId: string; attempt?: number },
  /** The apply's checks, told the repository, the chosen files (unsaved editors of them are saved first) and the attempt. */
  confirm: (repo: string, paths: readonly string[], attempt: number) => Promise<boolean>,
): Promise<boolean> {
  const listing = await runner.request('review/hunks', {
    run_id: target.runId,
    ...(target.attempt !== undefined ? { attempt: target.attempt } : {}),
  });
  const attempt = listing.attempt;
  const { run } = await runner.request('runs/show', { run_id: target.runId });
  const viewButton: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('diff'), tooltip: 'Show this change' };
  const rows: Row[] = hunkPicks(listing.files).map((pick) =>
    pick.kind === 'file'
      ? { label: pick.label, kind: vscode.QuickPickItemKind.Separator, pick }
      : { label: pick.label, description: pick.description, detail: pick.detail, buttons: [viewButton], pick },
  );
  const qp = vscode.window.createQuickPick<Row>();
  qp.title = `Apply part of attempt ${attempt} · ${runNameNow(run)}`;
  qp.placeholder = 'Choose the hunks to apply (the diff button shows one); the rest is left out';
  qp.canSelectMany = true;
  qp.matchOnDetail = true;
  qp.ignoreFocusOut = true;
  qp.items = rows;
  const show = async (pick: HunkPick) => {
    if (pick.kind !== 'hunk') return;
    const uri = (side: 'base' | 'attempt') => vscode.Uri.from(reviewUriParts({ runId: target.runId, side, path: pick.path, attempt }));
    const at = new vscode.Range(pick.line - 1, 0, pick.line - 1, 0);
    await vscode.commands.executeCommand('vscode.diff', uri('base'), uri('attempt'), `${pick.path} (attempt ${attempt})`, {
      preview: true,
      preserveFocus: true,
      selection: at,
    });
  };
  const chosen = await new Promise<Row[] | undefined>((resolve) => {
    qp.onDidTriggerItemButton((e) => void show(e.item.pick));
    qp.onDidAccept(() => {
      resolve([...qp.selectedItems]);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  if (!chosen) return false;
  if (chosen.length === 0) {
    void vscode.window.showInformationMessage('Forge: no hunk was chosen; nothing was applied.');
    return false;
  }
  if (!(await confirm(listing.repo, [...new Set(chosen.flatMap((c) => (c.pick.kind === 'hunk' ? [c.pick.path] : [])))], attempt)))
    return false;
  const r = await runner.request('review/apply', {
    run_id: target.runId,
    ...(target.attempt !== undefined ? { attempt: target.attempt } : {}),
    selection: selectionOf(chosen.map((c) => c.pick)),
    merge: true,
    conflicts: 'yours',
  });
  if (!r.applied) {
    const bad = r.files.filter((f) => !f.ok);
    void vscode.window.showErrorMessage(
      `Forge: nothing was applied: ${bad.map((f) => `${f.path} (${f.reason ?? 'does not apply'})`).join('; ')}.`,
    );
    return false;
  }
  const message = describePartOutcome(r.repo, chosen.length, r.left_out ?? []);
  await presentApplied(runner, target.runId, r, message);
  return true;
}
