import * as vscode from 'vscode';
import { API_KEY_SECRETS } from './settings.js';
import type { RunnerLaunch } from './runner/runnerConnection.js';
import { resolveRunnerLaunch } from './runner/runnerLaunch.js';

/** How the extension starts its runner: the node runtime setting, the first workspace folder, the qemu pool settings, and the model keys from SecretStorage. */
export function extensionRunnerLaunch(context: vscode.ExtensionContext): () => Promise<RunnerLaunch> {
  return async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    // Keys live in SecretStorage and reach the runner process only; cells get a scrubbed environment.
    for (const k of API_KEY_SECRETS) {
      const v = await context.secrets.get(k.secret);
      if (v) env[k.env] = v;
    }
    // The runner reads the qemu VM pool's settings from its environment (FORGE_QEMU_POOL*).
    const forge = vscode.workspace.getConfiguration('forge');
    const poolSize = forge.get<number | null>('qemu.poolSize', null);
    const poolMemory = forge.get<number | null>('qemu.poolMemoryMiB', null);
    if (typeof poolSize === 'number') env.FORGE_QEMU_POOL = String(poolSize);
    if (typeof poolMemory === 'number') env.FORGE_QEMU_POOL_MEMORY_MIB = String(poolMemory);
    return resolveRunnerLaunch({
      extensionPath: context.extensionPath,
      nodePathSetting: vscode.workspace.getConfiguration('forge').get<string>('runner.nodePath', ''),
      env,
      ...(vscode.workspace.workspaceFolders?.[0] ? { cwd: vscode.workspace.workspaceFolders[0].uri.fsPath } : {}),
    });
  };
}
