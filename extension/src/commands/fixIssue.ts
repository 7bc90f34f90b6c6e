import * as vscode from 'vscode';
import { type FixFlowDeps, fixIssueInCells } from '../flows/fixIssueFlow.js';
import { setRunActiveContext } from '../flows/followRun.js';
import type { IssueDrafts } from '../flows/issueDraft.js';
import { pickIssueFile, readIssueFile } from '../flows/issueFile.js';
import type { LanguageModelChoice } from '../flows/languageModelBridge.js';
import type { NotificationHub } from '../notificationHub.js';
import type { ReviewController } from '../review/reviewController.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { ForgeSettings } from '../settings.js';

export interface FixIssueCommandDeps {
  runner: RunnerConnection;
  hub: NotificationHub;
  log: vscode.LogOutputChannel;
  settings: () => ForgeSettings;
  review: ReviewController;
  /** Remembers the VS Code language model family the run asked for (model/reply answers with it). */
  languageModel: LanguageModelChoice;
  drafts: IssueDrafts;
}

function flowDeps(deps: FixIssueCommandDeps): FixFlowDeps {
  return {
    runner: deps.runner,
    hub: deps.hub,
    log: deps.log,
    settings: deps.settings,
    onLanguageModelFamily: (f) => (deps.languageModel.family = f),
    review: (id) => deps.review.open(id),
    apply: (id) => deps.review.apply(id),
    discard: (id) => deps.review.discard(id),
    setRunActive: setRunActiveContext,
    drafts: deps.drafts,
  };
}

/** forge.fixIssue: the Fix Issue in Cells flow, its outcome offering review, apply or discard. */
export function fixIssueCommand(deps: FixIssueCommandDeps): () => Promise<void> {
  return () => fixIssueInCells(flowDeps(deps));
}

/**
 * forge.fixIssueFromFile: the same flow with the issue read from a file, asked for (palette)
 * or the one the explorer's context menu was opened on. The file is read first, so a file
 * that cannot be an issue is refused before any pre-flight question.
 */
export function fixIssueFromFileCommand(deps: FixIssueCommandDeps): (uri?: vscode.Uri) => Promise<void> {
  return async (uri) => {
    const file = uri instanceof vscode.Uri ? uri : await pickIssueFile(vscode.workspace.workspaceFolders?.[0]?.uri);
    if (!file) return;
    const issue = await readIssueFile(file);
    await fixIssueInCells(flowDeps(deps), { folder: vscode.workspace.getWorkspaceFolder(file), ask: async () => issue });
  };
}

/** forge.startFixFromEditor: Start Fix in an issue draft's title bar; the draft's text goes on to fix/start. */
export function startFixFromEditorCommand(deps: FixIssueCommandDeps): (uri?: vscode.Uri) => Promise<void> {
  return (uri) =>
    deps.drafts.startFix(uri instanceof vscode.Uri ? uri : undefined, (take) => fixIssueInCells(flowDeps(deps), { ask: take }));
}
