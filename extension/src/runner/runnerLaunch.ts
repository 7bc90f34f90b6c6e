import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chooseNodeRuntime, fitsAbi, type NativeAbi, type RuntimeCandidate } from './nodeRuntime.js';
import type { RunnerLaunch } from './runnerConnection.js';

/** Asks a node binary for its version and ABI (about 40 ms); null fields when it cannot run. */
function probe(source: RuntimeCandidate['source'], path: string): Promise<RuntimeCandidate> {
  return new Promise((resolve) => {
    execFile(
      path,
      ['-p', 'process.versions.modules + " " + process.versions.node'],
      { timeout: 10_000, env: { ...process.env, ELECTRON_RUN_AS_NODE: '' } },
      (error, stdout) => {
        if (error) return resolve({ source, path, modules: null, version: null, error: error.message.split('\n')[0] ?? 'failed' });
        const [modules, version] = stdout.trim().split(' ');
        resolve({ source, path, modules: modules ?? null, version: version ?? null });
      },
    );
  });
}

export interface LaunchSettings {
  extensionPath: string;
  nodePathSetting: string;
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Resolves the runner command line; throws one line naming the fix when no runtime fits. */
export async function resolveRunnerLaunch(s: LaunchSettings): Promise<RunnerLaunch> {
  const want = JSON.parse(readFileSync(join(s.extensionPath, 'dist', 'native-abi.json'), 'utf8')) as NativeAbi;
  const candidates: RuntimeCandidate[] = [];
  if (s.nodePathSetting.trim()) {
    candidates.push(await probe('setting', s.nodePathSetting.trim()));
  } else if (!process.versions.electron) {
    // Plain Node extension host (code-server, VS Code Server): no probe needed.
    candidates.push({
      source: 'extension-host',
      path: process.execPath,
      modules: process.versions.modules,
      version: process.versions.node,
    });
  }
  if (!candidates.some((c) => fitsAbi(want, c.modules)) && !s.nodePathSetting.trim()) candidates.push(await probe('path', 'node'));
  const choice = chooseNodeRuntime(want, candidates);
  if (!choice.ok) throw new Error(choice.message);
  return { nodePath: choice.path, runnerScript: join(s.extensionPath, 'dist', 'runner.js'), env: s.env, ...(s.cwd ? { cwd: s.cwd } : {}) };
}
