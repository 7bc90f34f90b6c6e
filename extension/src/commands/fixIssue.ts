import type * as vscode from 'vscode';
import { fixIssueInCells } from '../flows/fixIssueFlow.js';
import { setRunActiveContext } from '../flows/followRun.js';
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
}

/** forge.fixIssue: the Fix Issue in Cells flow, its outcome offering review, apply or discard. */
export function fixIssueCommand(deps: FixIssueCommandDeps): () => Promise<void> {
  return () =>
    fixIssueInCells({
      runner: deps.runner,
      hub: deps.hub,
      log: deps.log,
      settings: deps.settings,
      onLanguageModelFamily: (f) => (deps.languageModel.family = f),
      review: (id) => deps.review.open(id),
      apply: (id) => deps.review.apply(id),
      discard: (id) => deps.review.discard(id),
      setRunActive: setRunActiveContext,
    });
}
