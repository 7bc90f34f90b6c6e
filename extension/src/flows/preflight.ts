import * as vscode from 'vscode';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { runnerModelSpec, type ForgeSettings } from '../settings.js';
import { planPreflight, type PreflightAction } from './preflightPlan.js';

export type PreflightResult = { go: false } | { go: true; allowDirty: boolean; untracked: string | null };

/**
 * Before the issue is asked for: a usable model, a repository with a commit, a test command,
 * and no tracked changes in the way (stashed, or left out on purpose). Each problem comes with
 * a button that acts on it, so nothing typed is lost to a refusal afterwards.
 */
export async function preflight(
  deps: { runner: RunnerConnection; settings: () => ForgeSettings },
  folder: vscode.WorkspaceFolder,
): Promise<PreflightResult> {
  const settings = deps.settings();
  let modelProblem: string | null = null;
  try {
    runnerModelSpec(settings.model, folder.uri.fsPath);
  } catch (e) {
    modelProblem = (e as Error).message;
  }
  const check = modelProblem
    ? null
    : await deps.runner.request('fix/check', {
        repo: folder.uri.fsPath,
        ...(settings.testCommand.trim() ? { test_cmd: settings.testCommand.trim() } : {}),
      });
  const plan = planPreflight(modelProblem, check);
  if (plan.block) {
    const choice = await vscode.window.showErrorMessage(plan.block.message, ...plan.block.actions.map((a) => a.label));
    const action = plan.block.actions.find((a) => a.label === choice)?.action;
    if (action) await preflightAction(action);
    return { go: false };
  }
  if (plan.repositoryFiles) {
    const choice = await vscode.window.showWarningMessage(
      plan.repositoryFiles.message,
      { modal: true, detail: plan.repositoryFiles.detail },
      'Allow',
      'Run Without Them',
    );
    if (choice === undefined) return { go: false };
    if (choice === 'Allow') await deps.runner.request('repo/trust', { repo: folder.uri.fsPath, files: plan.repositoryFiles.files });
  }
  if (plan.dirty) {
    const choice = await vscode.window.showWarningMessage(
      plan.dirty.message,
      { modal: true, detail: plan.dirty.detail },
      'Stash and Continue',
      'Continue from HEAD',
    );
    if (choice === 'Stash and Continue') {
      const r = await deps.runner.request('repo/stash', { repo: folder.uri.fsPath });
      void vscode.window.showInformationMessage(`Forge: ${r.message}.`);
      return { go: true, allowDirty: false, untracked: plan.untracked };
    }
    if (choice === 'Continue from HEAD') return { go: true, allowDirty: true, untracked: plan.untracked };
    return { go: false };
  }
  return { go: true, allowDirty: false, untracked: plan.untracked };
}

async function preflightAction(action: PreflightAction): Promise<void> {
  if (action === 'openModelSettings') await vscode.commands.executeCommand('workbench.action.openSettings', 'forge.model');
  else if (action === 'editTestCommand') await vscode.commands.executeCommand('workbench.action.openSettings', 'forge.testCommand');
  else if (action === 'openSourceControl') await vscode.commands.executeCommand('workbench.view.scm');
  // VS Code's Git extension initializes the folder (skipping its folder prompt when there is one folder).
  else await vscode.commands.executeCommand('git.init', true);
}
