import * as vscode from 'vscode';
import type { RunSnapshot } from '../../runner/src/protocol/rpcFix.js';
import { ForgeState } from './forgeState.js';
import { NotificationHub } from './notificationHub.js';
import { fixIssueInCells } from './flows/fixIssueFlow.js';
import { replyWithLanguageModel } from './flows/languageModelBridge.js';
import { DetailsPanel } from './panels/detailsPanel.js';
import { CellLogProvider, ReviewContentProvider } from './review/reviewDocuments.js';
import { ReviewController } from './review/reviewController.js';
import { LOG_SCHEME, logUriParts, REVIEW_SCHEME } from './review/reviewUris.js';
import { RunnerConnection } from './runner/runnerConnection.js';
import { resolveRunnerLaunch } from './runner/runnerLaunch.js';
import { API_KEY_SECRETS, type ForgeSettings } from './settings.js';
import { formatStatus } from './statusText.js';
import { type AttemptsNode, AttemptsTreeProvider } from './views/attemptsView.js';
import { CellsTreeProvider } from './views/cellsView.js';
import { InstancesTreeProvider } from './views/instancesView.js';
import type { InstanceRow } from './forgeState.js';
import type { CellSnapshot } from '../../runner/src/protocol/rpcFix.js';
import { HealthDocument } from './healthDocument.js';

/** What tests and the benchmark can reach after activation. */
export interface ForgeApi {
  state: ForgeState;
  runner: RunnerConnection;
}

function readSettings(): ForgeSettings {
  const c = vscode.workspace.getConfiguration('forge');
  return {
    attempts: c.get<number>('attempts', 3),
    provider: c.get<'host' | 'docker' | 'qemu'>('provider', 'host'),
    image: c.get<string>('image', ''),
    testCommand: c.get<string>('testCommand', ''),
    model: c.get<string>('model', ''),
    maxTurns: c.get<number>('maxTurns', 30),
  };
}

let activeRunner: RunnerConnection | null = null;

export function activate(context: vscode.ExtensionContext): ForgeApi {
  const log = vscode.window.createOutputChannel('Forge', { log: true });
  const state = new ForgeState();
  const hub = new NotificationHub();
  let lmFamily: string | null = null;
  let crashShown = false;
  let healthyTimer: NodeJS.Timeout | undefined;

  const runner = new RunnerConnection(
    async () => {
      const env: NodeJS.ProcessEnv = { ...process.env };
      // Keys live in SecretStorage and reach the runner process only; cells get a scrubbed environment.
      for (const k of API_KEY_SECRETS) {
        const v = await context.secrets.get(k.secret);
        if (v) env[k.env] = v;
      }
      return resolveRunnerLaunch({
        extensionPath: context.extensionPath,
        nodePathSetting: vscode.workspace.getConfiguration('forge').get<string>('runner.nodePath', ''),
        env,
        ...(vscode.workspace.workspaceFolders?.[0] ? { cwd: vscode.workspace.workspaceFolders[0].uri.fsPath } : {}),
      });
    },
    {
      state: (s, detail) => {
        updateStatus();
        if (s === 'ready') {
          healthyTimer = setTimeout(() => (crashShown = false), 60_000);
          void refreshAll();
        } else if (s === 'down' && detail && !crashShown && runner.pid === null) {
          log.error(detail);
        }
      },
      crash: (detail, restarting, delayMs) => {
        clearTimeout(healthyTimer);
        log.error(`${detail}${restarting ? `; restarting in ${delayMs} ms` : '; not restarting'}`);
        if (!restarting) {
          void vscode.window.showErrorMessage(`Forge: ${detail}. It kept crashing, so it was not restarted.`, 'Restart Runner', 'Show Log').then((c) => {
            if (c === 'Restart Runner') void vscode.commands.executeCommand('forge.restartRunner');
            if (c === 'Show Log') log.show();
          });
        } else if (!crashShown) {
          crashShown = true;
          void vscode.window.showWarningMessage(`Forge: ${detail}. Restarting it; the views show what the store recorded.`, 'Show Log').then((c) => c && log.show());
        }
      },
      notification: (method, params) => {
        if (method === 'runs/changed') {
          state.putSnapshot(params as RunSnapshot);
          refreshOpenAttemptPanels(params as RunSnapshot);
        } else if (method === 'cells/changed') {
          state.setRunning((params as { running: CellSnapshot[] }).running);
          updateStatus();
        } else if (method === 'instances/changed') {
          void refreshInstances();
        } else if (method === 'fix/finished') {
          void refreshHealth();
        }
        hub.dispatch(method, params);
      },
      log: (line) => log.info(line),
    },
  );
  activeRunner = runner;
  runner.onRequest('model/reply', async (params) => replyWithLanguageModel(params as Parameters<typeof replyWithLanguageModel>[0], lmFamily));

  const review = new ReviewController(runner, state);
  const health = new HealthDocument();
  const attempts = new AttemptsTreeProvider(state, (runId) => void loadRun(runId));
  const status = vscode.window.createStatusBarItem('forge.cells', vscode.StatusBarAlignment.Left, 10);
  status.name = 'Forge Cells';
  status.command = 'forge.showCellHealth';
  status.show();

  async function loadRun(runId: string): Promise<void> {
    state.putSnapshot(await runner.request('runs/show', { run_id: runId }));
  }
  async function refreshHealth(): Promise<void> {
    state.setHealth(await runner.request('cells/health', {}));
    updateStatus();
  }
  async function refreshInstances(): Promise<void> {
    state.setInstances(await runner.request('instances/list', {}));
  }
  /** After a (re)start: everything from the store. */
  async function refreshAll(): Promise<void> {
    try {
      state.setRuns(await runner.request('runs/list', { limit: 20 }));
      const newest = state.runs[0];
      if (newest) await loadRun(newest.run_id);
      await refreshInstances();
      await refreshHealth();
    } catch (e) {
      log.warn(`refresh failed: ${(e as Error).message}`);
    }
  }
  function updateStatus(): void {
    const view = formatStatus(state.health, state.running.length, readSettings().provider, runner.state);
    status.text = view.text;
    status.tooltip = view.tooltip;
    status.backgroundColor = view.degraded ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }
  async function showAttemptDetails(runId: string, index: number): Promise<void> {
    const details = await runner.request('attempts/details', { run_id: runId, index });
    const cells = await Promise.all(details.cells.map(async (c) => (c.running ? c : { ...c, log: (await runner.request('cells/log', { run_id: runId, cell_id: c.cell_id })).log })));
    DetailsPanel.show(context.extensionUri, `attempt:${runId}:${index}`, `Attempt ${index} · ${details.run.issue_title || runId}`, { kind: 'attempt', data: { ...details, cells } });
  }
  function refreshOpenAttemptPanels(snap: RunSnapshot): void {
    for (const a of snap.attempts) {
      if (DetailsPanel.isOpen(`attempt:${snap.run.run_id}:${a.index}`)) void showAttemptDetails(snap.run.run_id, a.index);
    }
  }
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
    vscode.window.createTreeView('forge.attempts', { treeDataProvider: attempts, showCollapseAll: true }),
    vscode.window.createTreeView('forge.cells', { treeDataProvider: new CellsTreeProvider(state) }),
    vscode.window.createTreeView('forge.instances', { treeDataProvider: new InstancesTreeProvider(state) }),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, new ReviewContentProvider(runner)),
    vscode.workspace.registerTextDocumentContentProvider(LOG_SCHEME, new CellLogProvider(runner)),
    vscode.workspace.registerTextDocumentContentProvider(HealthDocument.scheme, health),
    guard('forge.fixIssue', () => fixIssueInCells({
      runner, hub, settings: readSettings,
      onLanguageModelFamily: (f) => (lmFamily = f),
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
      await refreshHealth();
      await health.show(state.health!, state.running.length, readSettings().provider);
    }),
    guard('forge.openAttemptDetails', async (node?: AttemptsNode) => {
      const target = node?.kind === 'attempt' ? node : undefined;
      const runId = target?.runId ?? state.currentRun?.run_id;
      const snap = runId ? state.snapshots.get(runId) : undefined;
      const index = target?.attempt.index ?? snap?.attempts.find((a) => a.winner)?.index ?? snap?.attempts[0]?.index;
      if (!runId || index === undefined) return void vscode.window.showInformationMessage('Forge: no attempt to show yet.');
      await showAttemptDetails(runId, index);
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
      await refreshInstances();
    }),
    guard('forge.openInstanceDetails', async (row?: InstanceRow) => {
      if (!row) return;
      const [status, history] = await Promise.all([runner.request('instances/status', { instance_id: row.instance_id }), runner.request('instances/history', { instance_id: row.instance_id, limit: 200 })]);
      DetailsPanel.show(context.extensionUri, `instance:${row.instance_id}`, `Instance ${row.instance_id}`, { kind: 'instance', data: { status, history } });
    }),
    guard('forge.gc', async () => {
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (!folder) return void vscode.window.showErrorMessage('Forge: open a repository folder first.');
      const r = await runner.request('cells/gc', { repo: folder.uri.fsPath });
      const removed = r.items.filter((i) => i.action !== 'left');
      log.info(`gc: ${JSON.stringify(r)}`);
      void vscode.window.showInformationMessage(`Forge: removed ${removed.length} leftover(s)${removed.length ? `: ${removed.map((i) => `${i.kind} ${i.id}`).join(', ')}` : ''}; ${r.items.length - removed.length} left.${r.notes.length ? ` ${r.notes.join('; ')}` : ''}`);
    }),
    guard('forge.refresh', () => refreshAll()),
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
      if (e.affectsConfiguration('forge.provider')) updateStatus();
      if (e.affectsConfiguration('forge.runner.nodePath')) void runner.restart().catch((err: Error) => void vscode.window.showErrorMessage(`Forge: ${err.message}`));
    }),
    { dispose: () => void runner.stop() },
  );
  updateStatus();
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
