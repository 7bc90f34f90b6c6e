import { lchownSync, lstatSync, opendirSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../protocol/inputError.js';

/**
 * Who a cell's command runs as. Never root: a root runner runs cells as the owner of the
 * worktree when that is an ordinary user, else as a dedicated unprivileged user
 * (FORGE_CELL_UID / FORGE_CELL_GID, default 65532) that owns the worktrees the runner makes.
 * A cell can then neither read root-only host files nor leave root-owned setuid files behind.
 */
export interface CellUser {
  uid: number;
  gid: number;
  /** Why this user, for the isolation report. */
  why: string;
  /** Set when the worktree is not writable by this user (owned by root). */
  warning: string | null;
}

export const DEFAULT_CELL_ID = 65532;

/** Pure: the dedicated cell user from the environment (validated). */
export function dedicatedCellUser(env: NodeJS.ProcessEnv): { uid: number; gid: number } {
  const uid = idFrom('FORGE_CELL_UID', env.FORGE_CELL_UID, DEFAULT_CELL_ID);
  const gid = idFrom('FORGE_CELL_GID', env.FORGE_CELL_GID, uid);
  return { uid, gid };
}

function idFrom(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 2 ** 31 - 2) throw new InputError(`${name}=${raw}: expected a user/group id from 1 to ${2 ** 31 - 2} (never 0: cells do not run as root)`);
  return n;
}

/** Pure: decides the cell user from who runs the runner and who owns the worktree. */
export function chooseCellUser(facts: {
  runnerUid: number;
  runnerGid: number;
  worktreeOwner: { uid: number; gid: number } | null;
  worktree: string | null;
  env: NodeJS.ProcessEnv;
}): CellUser {
  if (facts.runnerUid !== 0) return { uid: facts.runnerUid, gid: facts.runnerGid, why: "the runner's own user", warning: null };
  const owner = facts.worktreeOwner;
  const dedicated = dedicatedCellUser(facts.env);
  // Group root is no better than user root: a root-group owner gets the cell group.
  if (owner && owner.uid !== 0) return { uid: owner.uid, gid: owner.gid !== 0 ? owner.gid : dedicated.gid, why: 'the owner of the worktree (the runner is root; cells never are)', warning: null };
  return {
    ...dedicated,
    why: 'the dedicated cell user (the runner is root; cells never are)',
    warning: owner && facts.worktree
      ? `the worktree ${facts.worktree} is owned by root and the cell runs as uid ${dedicated.uid}: it can read but not write what only root may; chown -R ${dedicated.uid}:${dedicated.gid} ${facts.worktree} to let it, or run forge-runner as the directory's owner`
      : null,
  };
}

/** The cell user for a worktree on this machine. */
export function cellUserFor(worktree: string | null, env: NodeJS.ProcessEnv = process.env): CellUser {
  let owner: { uid: number; gid: number } | null = null;
  if (worktree) {
    const st = lstatSync(worktree);
    owner = { uid: st.uid, gid: st.gid };
  }
  return chooseCellUser({ runnerUid: process.getuid?.() ?? 0, runnerGid: process.getgid?.() ?? 0, worktreeOwner: owner, worktree, env });
}

export function describeCellUser(user: CellUser): string {
  return `uid ${user.uid} gid ${user.gid} (${user.why})`;
}

/**
 * Gives a tree the runner made (an attempt worktree, a scratch directory) to the dedicated
 * cell user when the runner is root, so cells can write it. Symbolic links are changed
 * themselves, never followed; `skip` names entries (relative to `dir`) left as they are.
 */
export function handOverToCellUser(dir: string, env: NodeJS.ProcessEnv = process.env, skip: string[] = ['.git']): void {
  if ((process.getuid?.() ?? 0) !== 0) return;
  chownTree(dir, dedicatedCellUser(env), skip);
}

/** lchown of a whole tree (links changed, never followed), minus `skip` (relative names). */
export function chownTree(dir: string, to: { uid: number; gid: number }, skip: string[] = []): void {
  const { uid, gid } = to;
  lchownSync(dir, uid, gid);
  const stack: string[] = [dir];
  const skipped = new Set(skip.map((s) => join(dir, s)));
  while (stack.length > 0) {
    const current = stack.pop()!;
    const handle = opendirSync(current);
    try {
      for (let e = handle.readSync(); e !== null; e = handle.readSync()) {
        const path = join(current, e.name);
        if (skipped.has(path)) continue;
        lchownSync(path, uid, gid);
        if (e.isDirectory()) stack.push(path);
      }
    } finally {
      handle.closeSync();
    }
  }
}
