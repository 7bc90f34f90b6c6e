import nodeModule from 'node:module';
import { join } from 'node:path';
import { runnerStateDir } from '../cells/cellIdentity.js';

type EnableCompileCache = (dir: string) => { status: number; message?: string };

/**
 * Node 22.1+ keeps the V8 code of the runner's modules on disk (module.enableCompileCache), so
 * a command does not compile the same bundle again on every start. Node 20 has no such API:
 * nothing happens there. The cache is code, so it lives in the runner's own state directory
 * (the user's, which cells never see), not in Node's default under the shared /tmp.
 * FORGE_COMPILE_CACHE=0 turns it off.
 */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): void {
  const enable = (nodeModule as unknown as { enableCompileCache?: EnableCompileCache }).enableCompileCache;
  if (!enable || env.FORGE_COMPILE_CACHE === '0') return;
  try {
    enable(join(runnerStateDir(env), 'compile-cache'));
  } catch {
    // A cache that cannot be written only costs speed.
  }
}
