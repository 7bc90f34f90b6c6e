import * as vscode from 'vscode';
import { ForgeState, type InstanceRow } from './forgeState.js';
import type { CellSnapshot } from '../../runner/src/protocol/rpcFix.js';
import { fixIssueInCells } from './flows/fixIssueFlow.js';
import { DetailsPanel } from './panels/detailsPanel.js';
import { API_KEY_SECRETS } from './settings.js';
import { type AttemptsNode } from './views/attemptsView.js';
import { LanguageModelChoice, replyWithLanguageModel } from './flows/languageModelBridge.js';
import { HealthDocument } from './healthDocument.js';
import { extensionRunnerLaunch } from './launchRunner.js';
import { NotificationHub } from './notificationHub.js';
import { AttemptDetails } from './panels/attemptDetails.js';
import { CellLogProvider, ReviewContentProvider } from './review/reviewDocuments.js';
import { ReviewController } from './review/reviewController.js';
import { LOG_SCHEME, logUriParts, REVIEW_SCHEME } from './review/reviewUris.js';
import { RunnerConnection } from './runner/runnerConnection.js';
import { runnerEvents } from './runnerEvents.js';
import { CellsStatusBar } from './statusBar.js';
import { ViewRefresh } from './viewRefresh.js';
import { AttemptsTreeProvider } from './views/attemptsView.js';
import { CellsTreeProvider } from './views/cellsView.js';
import { InstancesTreeProvider } from './views/instancesView.js';
import { readSettings } from './workspaceSettings.js';

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
  const runner: RunnerConnection = new RunnerConnection(extensionRunnerLaunch(context), runnerEvents(() => ({ runner, log, state, hub, status, refresh, attemptDetails })));
  activeRunner = runner;
  runner.onRequest('model/reply', async (params) => replyWithLanguageModel(params as Parameters<typeof replyWithLanguageModel>[0], languageModel.family));

  const status = new CellsStatusBar({ state, runner, settings: readSettings });
  const refresh = new ViewRefresh({ runner, state, status, log });
  const attemptDetails = new AttemptDetails({ runner, extensionUri: context.extensionUri });
  const review = new ReviewController(runner, state);
  const health = new HealthDocument();

  const guard = (name: string, f: (...args: never[]) => Promise<unknown> | unknown) => vscode.commands.registerCommand(name, async (...args: never[]) => {
    try {
      return await f(...args);
    } catch (e) {
      const message = (e as Error).message.split('\n')[0];
      log.error(`${name}: ${(e as Error).stack ?? message}`);
      void vscode.window.showErrorMessage(`Forge: ${message}`);
      return undefined;
    }
  });
  const runIdOf = (node?: AttemptsNode): string | undefined => (node ? (node.kind === 'run' ? node.run.run_id : node.runId) : undefined);

  context.subscriptions.push(
    log,
    status,
    vscode.window.createTreeView('forge.attempts', { treeDataProvider: new AttemptsTreeProvider(state, (runId) => void refresh.loadRun(runId)), showCollapseAll: true }),
    vscode.window.createTreeView('forge.cells', { treeDataProvider: new CellsTreeProvider(state) }),
    vscode.window.createTreeView('forge.instances', { treeDataProvider: new InstancesTreeProvider(state) }),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, new ReviewContentProvider(runner)),
    vscode.workspace.registerTextDocumentContentProvider(LOG_SCHEME, new CellLogProvider(runner)),
    vscode.workspace.registerTextDocumentContentProvider(HealthDocument.scheme, health),
    guard('forge.fixIssue', () => fixIssueInCells({
      runner, hub, settings: readSettings,
      onLanguageModelFamily: (f) => (languageModel.family = f),
      review: (id) => review.open(id),
      apply: (id) => review.apply(id),
      discard: (id) => review.discard(id),
      setRunActive: (id) => void vscode.commands.executeCommand('setContext', 'forge.runActive', id !== null),
    })),
    guard('forge.reviewWinner', (node?: AttemptsNode) => review.open(runIdOf(node))),
    guard('forge.applyWinner', (node?: AttemptsNode) => review.apply(runIdOf(node))),
    guard('forge.discardAttempts', (node?: AttemptsNode) => review.discard(runIdOf(node))),
    guard('forge.cancelRun', async (node?: AttemptsNode) => {
      const id = runIdOf(node) ?? state.runs.find((r) => r.status === 'running')?.run_id;
      if (!id) return void vscode.window.showInformationMessage('Forge: no run in progress.');
      const r = await runner.request('fix/cancel', { run_id: id });
      if (!r.cancelled) void vscode.window.showInformationMessage(`Forge: run ${id} is not in progress in this runner.`);
    }),
    guard('forge.showCellHealth', async () => {
      await refresh.health();
      await health.show(state.health!, state.running.length, readSettings().provider);
    }),
    guard('forge.openAttemptDetails', async (node?: AttemptsNode) => {
      const target = node?.kind === 'attempt' ? node : undefined;
      const runId = target?.runId ?? state.currentRun?.run_id;
      const snap = runId ? state.snapshots.get(runId) : undefined;
      const index = target?.attempt.index ?? snap?.attempts.find((a) => a.winner)?.index ?? snap?.attempts[0]?.index;
      if (!runId || index === undefined) return void vscode.window.showInformationMessage('Forge: no attempt to show yet.');
      await attemptDetails.show(runId, index);
    }),
    guard('forge.openCellLog', async (cell?: CellSnapshot) => {
      if (!cell) return;
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.from(logUriParts(cell.run_id, cell.cell_id, `${cell.purpose}-${cell.cell_id}`)));
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    guard('forge.reconcileInstance', async (row?: InstanceRow) => {
      const id = row?.instance_id ?? (await vscode.window.showQuickPick(state.instances.map((i) => i.instance_id), { placeHolder: 'Instance to reconcile' }));
      if (!id) return;
      const r = await runner.request('instances/reconcile', { instance_id: id });
      void vscode.window.showInformationMessage(`Forge: ${id} is ${r.state} (${r.classes.join(', ') || 'converged'})${r.settled ? '' : '; still settling'}.`);
      await refresh.instances();
    }),
    guard('forge.openInstanceDetails', async (row?: InstanceRow) => {
      if (!row) return;
      const [instanceStatus, history] = await Promise.all([runner.request('instances/status', { instance_id: row.instance_id }), runner.request('instances/history', { instance_id: row.instance_id, limit: 200 })]);
      DetailsPanel.show(context.extensionUri, `instance:${row.instance_id}`, `Instance ${row.instance_id}`, { kind: 'instance', data: { status: instanceStatus, history } });
    }),
    guard('forge.gc', async () => {
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (!folder) return void vscode.window.showErrorMessage('Forge: open a repository folder first.');
      const r = await runner.request('cells/gc', { repo: folder.uri.fsPath });
      const removed = r.items.filter((i) => i.action !== 'left');
      log.info(`gc: ${JSON.stringify(r)}`);
      void vscode.window.showInformationMessage(`Forge: removed ${removed.length} leftover(s)${removed.length ? `: ${removed.map((i) => `${i.kind} ${i.id}`).join(', ')}` : ''}; ${r.items.length - removed.length} left.${r.notes.length ? ` ${r.notes.join('; ')}` : ''}`);
    }),
    guard('forge.refresh', () => refresh.all()),
    guard('forge.restartRunner', async () => {
      await runner.restart();
      void vscode.window.showInformationMessage('Forge: runner restarted.');
    }),
    guard('forge.setApiKey', async () => {
      const pick = await vscode.window.showQuickPick(API_KEY_SECRETS.map((k) => ({ label: k.label, k })), { placeHolder: 'Which model provider?' });
      if (!pick) return;
      const key = await vscode.window.showInputBox({ prompt: `${pick.k.label} API key (stored in VS Code's SecretStorage; empty removes it)`, password: true, ignoreFocusOut: true });
      if (key === undefined) return;
      if (key === '') await context.secrets.delete(pick.k.secret);
      else await context.secrets.store(pick.k.secret, key);
      if (!state.runs.some((r) => r.status === 'running')) await runner.restart();
      void vscode.window.showInformationMessage(`Forge: ${pick.k.label} key ${key === '' ? 'removed' : 'saved'}; the runner uses it from its next start.`);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('forge.provider')) status.update();
      if (e.affectsConfiguration('forge.runner.nodePath')) void runner.restart().catch((err: Error) => void vscode.window.showErrorMessage(`Forge: ${err.message}`));
    }),
    { dispose: () => void runner.stop() },
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
