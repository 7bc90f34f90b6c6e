import * as vscode from 'vscode';
import type { ForgeSettings } from '../settings.js';
import { fixStartParams, runnerModelSpec } from '../settings.js';
import { readModelPrices } from '../workspaceSettings.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { NotificationHub } from '../notificationHub.js';
import { announceRunEnd } from './announceRunEnd.js';
import { followRun } from './followRun.js';
import type { IssueDrafts } from './issueDraft.js';
import { pickIssueFile, readIssueFile } from './issueFile.js';
import { preflight } from './preflight.js';
import { shortTitle } from '../views/runTitle.js';

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
  drafts: IssueDrafts;
}

/** Where the issue comes from when the caller already has it (a file, a draft); by default it is asked for. */
export interface IssueSource {
  /** The repository the issue belongs to, when the caller knows it. */
  folder?: vscode.WorkspaceFolder;
  /** Called once the pre-flight let the run go: the issue, or undefined if the user gave up. */
  ask?: (folder: vscode.WorkspaceFolder, untracked: string | null) => Promise<string | undefined>;
}

/**
 * Asks for the issue: written or pasted in a draft editor (multi-line, Markdown), or a file
 * (issue*.md files in the workspace are offered). A draft keeps this flow waiting until its
 * Start Fix, so the folder and pre-flight answers given before it opened still hold.
 */
async function askIssue(drafts: IssueDrafts, folder: vscode.WorkspaceFolder, untracked: string | null): Promise<string | undefined> {
  const found = await vscode.workspace.findFiles(
    // Glob patterns are case-sensitive: ISSUE.md and Issue-12.md are issue files too.
    new vscode.RelativePattern(folder, '**/*{issue,Issue,ISSUE}*.{md,txt,MD,TXT,markdown}'),
    '**/{node_modules,.git,.forge}/**',
    10,
  );
  type Pick = vscode.QuickPickItem & { action: 'draft' | 'file' | 'open'; uri?: vscode.Uri };
  const items: Pick[] = [
    { label: '$(edit) Write or paste the issue…', description: 'in an editor, then Start Fix', action: 'draft' },
    { label: '$(file) Choose an issue file…', description: 'Markdown or text', action: 'open' },
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
  if (pick.action === 'draft') return drafts.open(untracked);
  const uri = pick.uri ?? (await pickIssueFile(folder.uri));
  return uri ? readIssueFile(uri) : undefined;
}

async function pickFolder(): Promise<vscode.WorkspaceFolder | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length <= 1) return folders[0];
  return vscode.window.showWorkspaceFolderPick({ placeHolder: 'Repository to fix' });
}

/** "Forge: Fix Issue in Cells": issue, defaults from settings, a cancellable progress notification, then the outcome. */
export async function fixIssueInCells(deps: FixFlowDeps, source: IssueSource = {}): Promise<void> {
  const folder = source.folder ?? (await pickFolder());
  if (!folder) {
    void vscode.window.showErrorMessage('Forge: open the repository to fix as a folder first (File > Open Folder).');
    return;
  }
  const ready = await preflight(deps, folder);
  if (!ready.go) return;
  const issue = await (source.ask ?? ((f, u) => askIssue(deps.drafts, f, u)))(folder, ready.untracked);
  if (issue === undefined) return;
  const settings = deps.settings();
  const model = runnerModelSpec(settings.model, folder.uri.fsPath);
  deps.onLanguageModelFamily(model.lmFamily);
  const { run_id: runId } = await deps.runner.request('fix/start', {
    ...fixStartParams({ ...settings, modelPrices: readModelPrices() }, folder.uri.fsPath, issue, model.spec),
    ...(ready.allowDirty ? { allow_dirty: true } : {}),
  });
  // Named by its issue: several runs' notifications can be on screen at once.
  const title = shortTitle(
    issue
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.replace(/^#+\s*/, '') ?? '',
    40,
  );
  const finished = await followRun(deps, runId, `Forge: "${title}" (${settings.attempts} attempts, ${settings.provider} cells)`);
  await announceRunEnd({ ...deps, rerun: () => fixIssueInCells(deps, { folder, ask: async () => issue }) }, runId, finished);
}
