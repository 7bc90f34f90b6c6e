import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import type { ForgeSettings } from '../settings.js';
import { fixStartParams, runnerModelSpec } from '../settings.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { NotificationHub } from '../notificationHub.js';
import { announceRunEnd } from './announceRunEnd.js';
import { followRun } from './followRun.js';
import { preflight } from './preflight.js';

export interface FixFlowDeps {
  runner: RunnerConnection;
  hub: NotificationHub;
  log: vscode.LogOutputChannel;
  settings: () => ForgeSettings;
  onLanguageModelFamily: (family: string | null) => void;
  review: (runId: string) => Promise<void>;
  apply: (runId: string) => Promise<unknown>;
  discard: (runId: string) => Promise<unknown>;
  setRunActive: (runId: string | null) => void;
}

/** Asks for the issue: typed or pasted text, or a file (issue*.md files in the workspace are offered). */
async function askIssue(folder: vscode.WorkspaceFolder, untracked: string | null): Promise<string | undefined> {
  const found = await vscode.workspace.findFiles(
    new vscode.RelativePattern(folder, '**/*issue*.{md,txt}'),
    '**/{node_modules,.git,.forge}/**',
    10,
  );
  type Pick = vscode.QuickPickItem & { action: 'text' | 'file' | 'open'; uri?: vscode.Uri };
  const items: Pick[] = [
    { label: '$(edit) Type or paste the issue text', action: 'text' },
    { label: '$(file) Pick an issue file…', action: 'open' },
    ...found.map((uri) => ({
      label: `$(markdown) ${vscode.workspace.asRelativePath(uri)}`,
      description: 'issue file',
      action: 'file' as const,
      uri,
    })),
  ];
  const pick = await vscode.window.showQuickPick(items, {
    title: 'Forge: Fix Issue in Cells',
    placeHolder: `Which issue should the attempts fix?${untracked ? ` (${untracked})` : ''}`,
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  if (pick.action === 'text') {
    return vscode.window.showInputBox({
      title: 'Forge: Fix Issue in Cells',
      prompt: 'The issue: what is wrong and how to see it (a failing test is the oracle)',
      placeHolder: 'e.g. average() returns the wrong value for [2, 4]',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() === '' ? 'The issue text is empty' : undefined),
    });
  }
  const uri =
    pick.uri ??
    (
      await vscode.window.showOpenDialog({
        canSelectMany: false,
        defaultUri: folder.uri,
        filters: { Issue: ['md', 'txt'], All: ['*'] },
        title: 'Issue file',
      })
    )?.[0];
  if (!uri) return undefined;
  const text = readFileSync(uri.fsPath, 'utf8');
  if (text.trim() === '') throw new Error(`${uri.fsPath} is empty`);
  return text;
}

async function pickFolder(): Promise<vscode.WorkspaceFolder | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length <= 1) return folders[0];
  return vscode.window.showWorkspaceFolderPick({ placeHolder: 'Repository to fix' });
}

/** "Forge: Fix Issue in Cells": issue, defaults from settings, a cancellable progress notification, then the outcome. */
export async function fixIssueInCells(deps: FixFlowDeps): Promise<void> {
  const folder = await pickFolder();
  if (!folder) {
    void vscode.window.showErrorMessage('Forge: open the repository to fix as a folder first (File > Open Folder).');
    return;
  }
  const ready = await preflight(deps, folder);
  if (!ready.go) return;
  const issue = await askIssue(folder, ready.untracked);
  if (issue === undefined) return;
  const settings = deps.settings();
  const model = runnerModelSpec(settings.model, folder.uri.fsPath);
  deps.onLanguageModelFamily(model.lmFamily);
  const { run_id: runId } = await deps.runner.request('fix/start', {
    ...fixStartParams(settings, folder.uri.fsPath, issue, model.spec),
    ...(ready.allowDirty ? { allow_dirty: true } : {}),
  });
  const finished = await followRun(deps, runId, `Forge: ${settings.attempts} attempt(s) in ${settings.provider} cells`);
  await announceRunEnd(deps, runId, finished);
}
