import * as vscode from 'vscode';
import { registerCommands } from './commands/index.js';
import { trackResumable } from './commands/resumeRun.js';
import { trackReviewable } from './commands/reviewCommands.js';
import { ForgeState } from './forgeState.js';
import { IssueDrafts } from './flows/issueDraft.js';
import { LanguageModelChoice, replyWithLanguageModel } from './flows/languageModelBridge.js';
import { HealthDocument } from './healthDocument.js';
import { extensionRunnerLaunch } from './launchRunner.js';
import { NotificationHub } from './notificationHub.js';
import { AttemptDetails } from './panels/attemptDetails.js';
import { CellLogProvider, ReviewContentProvider } from './review/reviewDocuments.js';
import { ReviewController } from './review/reviewController.js';
import { LOG_SCHEME, REVIEW_SCHEME } from './review/reviewUris.js';
import { RunnerConnection } from './runner/runnerConnection.js';
import { runnerEvents } from './runnerEvents.js';
import { CellsStatusBar } from './statusBar.js';
import { ViewRefresh } from './viewRefresh.js';
import { announceInterruptedRuns } from './flows/announceInterrupted.js';
import { offerOldAttempts } from './flows/attemptRetention.js';
import { AttemptsTreeProvider, bindAttemptsScope } from './views/attemptsView.js';
import { CellsTreeProvider } from './views/cellsView.js';
import { InstancesTreeProvider } from './views/instancesView.js';
import { readSettings } from './workspaceSettings.js';
import { getStartedCommand, openWalkthroughOnFirstRun } from './firstRun/walkthrough.js';

/** What tests and the benchmark can reach after activation. */
export interface ForgeApi {
  state: ForgeState;
  runner: RunnerConnection;
}

/** The runner of the active extension, for deactivate(). */
let activeRunner: RunnerConnection | null = null;

/** Constructs the runner connection, views, status bar and commands, and wires them together; the runner starts in the background. */
export function activate(context: vscode.ExtensionContext): ForgeApi {
  const log = vscode.window.createOutputChannel('Forge', { log: true });
  const state = new ForgeState();
  const hub = new NotificationHub();
  const languageModel = new LanguageModelChoice();
  // The events are read when they arrive, so they can reach the views built on this connection below.
  const runner: RunnerConnection = new RunnerConnection(
    extensionRunnerLaunch(context),
    runnerEvents(() => ({ runner, log, state, hub, status, refresh, attemptDetails })),
  );
  activeRunner = runner;
  runner.onRequest('model/reply', async (params) =>
    replyWithLanguageModel(params as Parameters<typeof replyWithLanguageModel>[0], languageModel.family),
  );

  const status = new CellsStatusBar({ state, runner, settings: readSettings });
  const refresh = new ViewRefresh({ runner, state, status, log });
  const attemptDetails = new AttemptDetails({ runner, extensionUri: context.extensionUri });
  const review = new ReviewController(runner, state);
  const health = new HealthDocument();
  const drafts = new IssueDrafts();
  const folderPaths = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  state.setScope(folderPaths());
  const attemptsView = vscode.window.createTreeView('forge.attempts', {
    treeDataProvider: new AttemptsTreeProvider(state, (runId) => void refresh.loadRun(runId)),
    showCollapseAll: true,
  });

  context.subscriptions.push(
    log,
    status,
    drafts,
    attemptsView,
    bindAttemptsScope(attemptsView, state),
    vscode.workspace.onDidChangeWorkspaceFolders(() => state.setScope(folderPaths())),
    vscode.window.createTreeView('forge.cells', { treeDataProvider: new CellsTreeProvider(state) }),
    vscode.window.createTreeView('forge.instances', { treeDataProvider: new InstancesTreeProvider(state) }),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, new ReviewContentProvider(runner)),
    vscode.workspace.registerTextDocumentContentProvider(LOG_SCHEME, new CellLogProvider(runner)),
    vscode.workspace.registerTextDocumentContentProvider(HealthDocument.scheme, health),
    ...registerCommands({
      runner,
      state,
      hub,
      log,
      settings: readSettings,
      review,
      health,
      refresh,
      attemptDetails,
      languageModel,
      extensionUri: context.extensionUri,
      secrets: context.secrets,
      drafts,
      getStarted: getStartedCommand(context),
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('forge.provider') || e.affectsConfiguration('forge.model')) status.update();
      if (e.affectsConfiguration('forge.runner.nodePath') || e.affectsConfiguration('forge.qemu'))
        void runner.restart().catch((err: Error) => void vscode.window.showErrorMessage(`Forge: ${err.message}`));
    }),
    trackResumable(state),
    announceInterruptedRuns(state, context.workspaceState),
    offerOldAttempts(state, runner, log),
    trackReviewable(state),
    { dispose: () => void runner.stop() },
    openWalkthroughOnFirstRun(context, log),
  );
  status.update();
  // Started in the background: activation does not wait for the runner.
  void runner.start().catch((e: Error) => {
    log.error(e.message);
    void vscode.window.showErrorMessage(`Forge: ${e.message}`, 'Show Log').then((c) => c && log.show());
  });
  return { state, runner };
}

/** Stops the runner (cancelling runs in progress, so their cells are killed) before the host goes. */
export function deactivate(): Promise<void> | undefined {
  const r = activeRunner;
  activeRunner = null;
  return r?.stop();
}
