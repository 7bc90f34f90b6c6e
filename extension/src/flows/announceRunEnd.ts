import * as vscode from 'vscode';
import type { RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { closestAttempt, describeRunEnd, type RunEndAction } from './runEnd.js';

export interface RunEndDeps {
  runner: RunnerConnection;
  log: vscode.LogOutputChannel;
  review: (runId: string) => Promise<unknown>;
  apply: (runId: string) => Promise<unknown>;
  discard: (runId: string) => Promise<unknown>;
  /** Starts the same issue again in the same repository (after Install Dependencies); absent when the flow is not known. */
  rerun?: () => Promise<void>;
}

/**
 * The end of a run: the Forge view comes forward and a notification says what happened, with
 * the next steps as buttons (runEnd.ts decides which). Resolves once the chosen action ran.
 */
export async function announceRunEnd(deps: RunEndDeps, runId: string, finished: { status: string; error: string | null }): Promise<void> {
  const snap = await deps.runner.request('runs/show', { run_id: runId }).catch(() => null);
  const view = describeRunEnd(finished, snap);
  deps.log.info(`[${runId}] ${view.message}`);
  void vscode.commands.executeCommand('forge.attempts.focus');
  const show =
    view.severity === 'info'
      ? vscode.window.showInformationMessage
      : view.severity === 'warning'
        ? vscode.window.showWarningMessage
        : vscode.window.showErrorMessage;
  const choice = await show(view.message, ...view.actions.map((a) => a.label));
  const action = view.actions.find((a) => a.label === choice)?.action;
  if (action) await runEndAction(deps, action, runId, snap);
}

async function runEndAction(deps: RunEndDeps, action: RunEndAction, runId: string, snap: RunSnapshot | null): Promise<void> {
  switch (action) {
    case 'review':
      return void (await deps.review(runId));
    case 'apply':
      return void (await deps.apply(runId));
    case 'discard':
      return void (await deps.discard(runId));
    case 'showAttempts':
      return void (await vscode.commands.executeCommand('forge.attempts.focus'));
    case 'baselineLog': {
      const cell = snap?.cells.find((c) => c.purpose === 'baseline' && !c.running);
      if (!cell) return void vscode.window.showInformationMessage('Forge: this run has no baseline log (its baseline never ran).');
      return void (await vscode.commands.executeCommand('forge.openCellLog', cell));
    }
    case 'attemptLog': {
      // The verdict log of the closest attempt (or of any judged one), at the first failing test or crash it names.
      const index = snap ? closestAttempt(snap) : null;
      const attempt = snap?.attempts.find((a) => a.index === index) ?? snap?.attempts.find((a) => a.reason);
      // Its own verdict cell, else the one of the attempt whose identical change it shared a verdict with.
      const verdictCell = (index: number | undefined) =>
        [...(snap?.cells ?? [])].reverse().find((c) => c.attempt_index === index && c.purpose.startsWith('verdict') && !c.running);
      const cell = verdictCell(attempt?.index) ?? (attempt?.agrees_with ?? []).map(verdictCell).find((c) => c !== undefined);
      if (!attempt || !cell) return void vscode.window.showInformationMessage('Forge: this run has no test log of an attempt to open.');
      const named = [...(attempt.reason ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
      const crash = attempt.could_not_run ? [attempt.could_not_run.replace(/^.*\((.*)\)$/, '$1')] : [];
      return void (await vscode.commands.executeCommand('forge.openCellLog', cell, [...crash, ...named, 'not ok', 'FAIL', 'Error']));
    }
    case 'attemptDetails': {
      const index = snap ? closestAttempt(snap) : null;
      const attempt = snap?.attempts.find((a) => a.index === index);
      if (attempt) await vscode.commands.executeCommand('forge.openAttemptDetails', { kind: 'attempt', runId, attempt });
      return;
    }
    case 'editTestCommand':
      return void (await vscode.commands.executeCommand('workbench.action.openSettings', 'forge.testCommand'));
    case 'cellTimeoutSetting':
      return void (await vscode.commands.executeCommand('workbench.action.openSettings', 'forge.cellTimeout'));
    case 'installDependencies':
      return installDependencies(deps.runner, snap?.run.repo, deps.rerun);
    case 'showLog':
      return deps.log.show();
    case 'resume':
      return void (await vscode.commands.executeCommand('forge.resumeRun', snap ? { kind: 'run', run: snap.run } : undefined));
  }
}

/**
 * "Install Dependencies…": the stack's install command, confirmed or edited by the user, run
 * in a terminal in the repository, on this machine and its network (cells have none); the
 * next run's cells share what it installed (node_modules, the virtualenv) read-only.
 */
export async function installDependencies(runner: RunnerConnection, repo: string | undefined, rerun?: () => Promise<void>): Promise<void> {
  if (!repo) return;
  const check = await runner.request('fix/check', { repo }).catch(() => null);
  const command = await vscode.window.showInputBox({
    title: 'Forge: Install Dependencies',
    prompt: `Runs in a terminal in ${repo}, on this machine (cells have no network); the next run's cells share what it installs.`,
    value: check?.install_cmd ?? '',
    placeHolder: 'e.g. npm ci, python3 -m pip install -r requirements.txt',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() === '' ? 'Type the command that installs the dependencies' : undefined),
  });
  if (!command) return;
  // A task, not a bare terminal: its end (and exit code) is known, so the run can be offered again.
  const task = new vscode.Task(
    { type: 'shell', forge: 'install' },
    vscode.TaskScope.Workspace,
    'install dependencies',
    'Forge',
    new vscode.ShellExecution(command.trim(), { cwd: repo }),
  );
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
  const execution = await vscode.tasks.executeTask(task);
  const exitCode = await new Promise<number | undefined>((resolve) => {
    const sub = vscode.tasks.onDidEndTaskProcess((e) => {
      if (e.execution !== execution) return;
      sub.dispose();
      resolve(e.exitCode);
    });
  });
  if (exitCode !== 0) {
    void vscode.window.showErrorMessage(`Forge: "${command.trim()}" exited ${exitCode ?? 'without a code'}; see its terminal.`);
    return;
  }
  const again = rerun ? 'Run the Fix Again' : undefined;
  const choice = await vscode.window.showInformationMessage(
    `Forge: dependencies installed in ${repo}; the next run's cells share them.`,
    ...(again ? [again] : []),
  );
  if (choice === again && rerun) await rerun();
}
