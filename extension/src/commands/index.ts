import type * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { HealthDocument } from '../healthDocument.js';
import type { IssueDrafts } from '../flows/issueDraft.js';
import type { LanguageModelChoice } from '../flows/languageModelBridge.js';
import type { NotificationHub } from '../notificationHub.js';
import type { AttemptDetails } from '../panels/attemptDetails.js';
import type { ReviewController } from '../review/reviewController.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import type { ForgeSettings } from '../settings.js';
import type { ViewRefresh } from '../viewRefresh.js';
import { openAttemptDetailsCommand, openCellLogCommand } from './detailsCommands.js';
import { fixIssueCommand, fixIssueFromFileCommand, startFixFromEditorCommand } from './fixIssue.js';
import { type CommandHandler, registerGuarded } from './guard.js';
import { openInstanceDetailsCommand, openInstancesGuideCommand, reconcileInstanceCommand } from './instanceCommands.js';
import { resumeRunCommand } from './resumeRun.js';
import { cancelRunCommand, reviewCommands } from './reviewCommands.js';
import { gcCommand, refreshCommand, restartRunnerCommand, showCellHealthCommand } from './runnerCommands.js';
import { setApiKeyCommand } from './setApiKey.js';
import { discardOldAttemptsCommand } from './discardOldAttempts.js';

/** Everything a command may use; each command takes only its part. */
export interface CommandDeps {
  runner: RunnerConnection;
  state: ForgeState;
  hub: NotificationHub;
  log: vscode.LogOutputChannel;
  settings: () => ForgeSettings;
  review: ReviewController;
  health: HealthDocument;
  refresh: ViewRefresh;
  attemptDetails: AttemptDetails;
  languageModel: LanguageModelChoice;
  extensionUri: vscode.Uri;
  secrets: vscode.SecretStorage;
  drafts: IssueDrafts;
  /** forge.getStarted: opens the walkthrough (firstRun/walkthrough.ts). */
  getStarted: CommandHandler;
}

/** The extension's commands by id (package.json contributes each one: test/extension/commandContributions.unit.test.ts). */
export function forgeCommands(deps: CommandDeps): Record<string, CommandHandler> {
  const review = reviewCommands(deps);
  return {
    'forge.fixIssue': fixIssueCommand(deps),
    'forge.fixIssueFromFile': fixIssueFromFileCommand(deps),
    'forge.startFixFromEditor': startFixFromEditorCommand(deps),
    'forge.reviewWinner': review.reviewWinner,
    'forge.applyWinner': review.applyWinner,
    'forge.discardAttempts': review.discardAttempts,
    'forge.viewAttemptDiff': review.viewAttemptDiff,
    'forge.compareWithWinner': review.compareWithWinner,
    'forge.applyAttempt': review.applyAttempt,
    'forge.applyPartOfAttempt': review.applyPartOfAttempt,
    'forge.undoApply': review.undoApply,
    'forge.cancelRun': cancelRunCommand(deps),
    'forge.resumeRun': resumeRunCommand(deps),
    'forge.showCellHealth': showCellHealthCommand(deps),
    'forge.openAttemptDetails': openAttemptDetailsCommand(deps),
    'forge.openCellLog': openCellLogCommand(),
    'forge.reconcileInstance': reconcileInstanceCommand(deps),
    'forge.openInstanceDetails': openInstanceDetailsCommand(deps),
    'forge.gc': gcCommand(deps),
    'forge.discardOldAttempts': discardOldAttemptsCommand(deps),
    'forge.refresh': refreshCommand(deps),
    'forge.restartRunner': restartRunnerCommand(deps),
    'forge.setApiKey': setApiKeyCommand(deps),
    'forge.showAllRuns': () => deps.state.setScope(deps.state.folders, true),
    'forge.showWorkspaceRuns': () => deps.state.setScope(deps.state.folders, false),
    'forge.openInstancesGuide': openInstancesGuideCommand(deps),
    'forge.getStarted': deps.getStarted,
  };
}

/** Registers every command, each guarded (a failure is logged and shown, not thrown). */
export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  return Object.entries(forgeCommands(deps)).map(([id, handler]) => registerGuarded(deps.log, id, handler));
}
