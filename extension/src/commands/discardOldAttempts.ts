import * as vscode from 'vscode';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { shortTitle } from '../views/runTitle.js';
import { ageText, olderThanSeconds, retentionDays } from '../flows/attemptRetention.js';

/**
 * forge.discardOldAttempts: the runs nobody reviewed within forge.attemptRetentionDays (with
 * their branches and worktrees) in a multi-select list, all picked; after the user confirms,
 * the runner discards the picked ones (each checked again there) and this says what went.
 */
export function discardOldAttemptsCommand(deps: { runner: RunnerConnection; log: vscode.LogOutputChannel }) {
  return async (): Promise<void> => {
    const days = retentionDays();
    const olderThan = olderThanSeconds(days);
    const found = await deps.runner.request('runs/old', { older_than_s: olderThan });
    for (const n of found.notes) deps.log.info(`old attempts: ${n}`);
    if (found.runs.length === 0) {
      void vscode.window.showInformationMessage(`Forge: no attempts left unreviewed for more than ${ageText(olderThan)}.`);
      return;
    }
    type Item = vscode.QuickPickItem & { runId: string };
    const items: Item[] = found.runs.map((r) => {
      const n = r.branches.length;
      const w = r.worktrees.length;
      return {
        runId: r.run_id,
        label: shortTitle(r.issue_title || r.run_id),
        description: `${ageText(r.age_s)} old · ${n} branch${n === 1 ? '' : 'es'}${w ? ` · ${w} worktree${w === 1 ? '' : 's'}` : ''}`,
        detail: `${r.status}, not reviewed · ${r.repo} · ${r.run_id}`,
      };
    });
    const picked = await pickMany(items, `Discard Old Attempts: runs not reviewed for more than ${ageText(olderThan)}`);
    if (!picked || picked.length === 0) return;
    const branches = found.runs.filter((r) => picked.some((p) => p.runId === r.run_id)).reduce((s, r) => s + r.branches.length, 0);
    const choice = await vscode.window.showWarningMessage(
      `Discard ${picked.length} run${picked.length === 1 ? '' : 's'} and delete ${branches} branch${branches === 1 ? '' : 'es'} with any worktree left?`,
      { modal: true, detail: 'Their attempts are no longer offered for review or apply. Runs in progress are never touched.' },
      'Discard',
    );
    if (choice !== 'Discard') return;
    const { results } = await deps.runner.request('runs/discardOld', { run_ids: picked.map((p) => p.runId), older_than_s: olderThan });
    const done = results.filter((r) => r.discarded);
    const left = results.filter((r) => !r.discarded);
    const removed = done.flatMap((r) => r.removed);
    deps.log.info(`discard old attempts: ${JSON.stringify(results)}`);
    // The names go to the log (a toast cuts long lines); the toast says how many of each went.
    const branchesGone = removed.filter((x) => x.startsWith('branch ')).length;
    const worktreesGone = removed.length - branchesGone;
    void vscode.window
      .showInformationMessage(
        `Forge: discarded ${done.length} old run${done.length === 1 ? '' : 's'}: ${branchesGone} branch${branchesGone === 1 ? '' : 'es'} and ` +
          `${worktreesGone} worktree${worktreesGone === 1 ? '' : 's'} removed.` +
          (left.length ? ` Left ${left.length}: ${left.map((r) => `${r.run_id} (${r.reason ?? '?'})`).join('; ')}.` : ''),
        'Show Log',
      )
      .then((c) => c && deps.log.show());
  };
}

/** A multi-select quick pick with every item picked at first; undefined when dismissed. */
function pickMany<T extends vscode.QuickPickItem>(items: T[], title: string): Promise<readonly T[] | undefined> {
  return new Promise((resolve) => {
    const qp = vscode.window.createQuickPick<T>();
    qp.title = title;
    qp.placeholder = 'Untick the runs to keep, then press Enter (or OK)';
    qp.canSelectMany = true;
    qp.items = items;
    qp.selectedItems = items;
    let settled = false;
    qp.onDidAccept(() => {
      settled = true;
      resolve([...qp.selectedItems]);
      qp.hide();
    });
    qp.onDidHide(() => {
      if (!settled) resolve(undefined);
      qp.dispose();
    });
    qp.show();
  });
}
