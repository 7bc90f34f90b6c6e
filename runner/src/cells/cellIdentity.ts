import { randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** Sortable, unique, and safe as a directory or cgroup name. */
export function newCellId(now = Date.now()): string {
  return `cell-${now.toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * Where the runner keeps what outlives a cell (its capped log). FORGE_STATE_DIR overrides;
 * otherwise the XDG state directory.
 */
export function runnerStateDir(env: NodeJS.ProcessEnv = process.env): string {
  // Absolute, so a cell's sandbox (whose working directory differs) finds the same place.
  if (env.FORGE_STATE_DIR) return resolve(env.FORGE_STATE_DIR);
  const base = env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'forge-cells');
}
