import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { API_KEY_SECRETS } from '../settings.js';

/** forge.setApiKey: a model provider's key into SecretStorage (empty removes it); the runner restarts to use it unless a run is in progress. */
export function setApiKeyCommand(deps: { secrets: vscode.SecretStorage; runner: RunnerConnection; state: ForgeState }) {
  return async (): Promise<void> => {
    const pick = await vscode.window.showQuickPick(
      API_KEY_SECRETS.map((k) => ({ label: k.label, k })),
      { placeHolder: 'Which model provider?' },
    );
    if (!pick) return;
    const key = await vscode.window.showInputBox({
      prompt: `${pick.k.label} API key (stored in VS Code's SecretStorage; empty removes it)`,
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key === '') await deps.secrets.delete(pick.k.secret);
    else await deps.secrets.store(pick.k.secret, key);
    // The walkthrough's "Choose a model" step completes on this key, not on the command: a step
    // completing on a command moves focus into the walkthrough while this command's inputs are open.
    if (key !== '') void vscode.commands.executeCommand('setContext', 'forge.apiKeyStored', true);
    if (!deps.state.runs.some((r) => r.status === 'running')) await deps.runner.restart();
    void vscode.window.showInformationMessage(
      `Forge: ${pick.k.label} key ${key === '' ? 'removed' : 'saved'}; the runner uses it from its next start.`,
    );
  };
}
