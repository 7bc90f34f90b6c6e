import { createHash } from 'node:crypto';
import { resolve } from 'node:path';

/**
 * Labels in the config of every image a runner pushes to the swarm registry: who pushed it,
 * read back by `gc` to tell when that runner is gone. Not forge.runner.*: a cell's container
 * inherits its image's labels, and those name the runner of the cell, not of the push.
 */
export const LABEL_PUSHED_BY_PID = 'forge.pushed-by.pid';
export const LABEL_PUSHED_BY_HOST = 'forge.pushed-by.host';
/** The pusher's state directory, as an id: runners sharing it may use the image by the digest it recorded. */
export const LABEL_PUSHED_BY_STATE = 'forge.pushed-by.state';

/** Pure: a short id of a state directory (its resolved path, hashed: the registry is readable by every local user). */
export function stateDirId(stateDir: string): string {
  return createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 16);
}

/** Pure: the labels of an image pushed by runner `pid` on `host` with state directory `stateDir`. */
export function pushLabels(owner: { pid: number; host: string; stateDir: string }): Record<string, string> {
  return {
    [LABEL_PUSHED_BY_PID]: String(owner.pid),
    [LABEL_PUSHED_BY_HOST]: owner.host,
    [LABEL_PUSHED_BY_STATE]: stateDirId(owner.stateDir),
  };
}
