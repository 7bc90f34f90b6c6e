import { closeSync, constants, lchownSync, lstatSync, openSync, readdirSync } from 'node:fs';
import { normalize } from 'node:path';
import { descriptorPath, entryPath, O_PATH, openDirectoryAt } from './beneath.js';
import { InputError } from '../protocol/inputError.js';

/**
 * Who a cell's command runs as. Never root: a root runner runs every cell as one dedicated
 * unprivileged user (FORGE_CELL_UID / FORGE_CELL_GID, default 65532) that owns the worktrees
 * the runner makes. A cell can then neither read root-only host files nor leave root-owned
 * setuid files behind, and anything that user owns is known to be a cell's work (git data
 * owned by it is never trusted). Not the worktree owner: git data a cell made as that user
 * could not be told from the owner's own.
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
  if (!/^\d+$/.test(raw) || n < 1 || n > 2 ** 31 - 2)
    throw new InputError(`${name}=${raw}: expected a user/group id from 1 to ${2 ** 31 - 2} (never 0: cells do not run as root)`);
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
  return {
    ...dedicated,
    why: 'the dedicated cell user (the runner is root; cells never are)',
    warning:
      owner && facts.worktree && owner.uid !== dedicated.uid
        ? `the worktree ${facts.worktree} is owned by uid ${owner.uid} and the cell runs as uid ${dedicated.uid}: it can write only what that uid may; to let it, chown -R ${dedicated.uid}:${dedicated.gid} ${facts.worktree} and then chown -R ${owner.uid}:${owner.gid} ${facts.worktree}/.git (git data must stay yours), or run forge-runner as a normal user`
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

/**
 * lchown of a whole tree (links changed, never followed), minus `skip` (relative names). Each
 * name is reached through its parent's open descriptor, never by a path from the top: a
 * directory swapped for a link meanwhile leads nowhere but where the descriptor is.
 */
export function chownTree(dir: string, to: { uid: number; gid: number }, skip: string[] = []): void {
  const { uid, gid } = to;
  lchownSync(dir, uid, gid);
  // Names as bytes: a name that is not UTF-8 would otherwise be looked up under another name.
  const skipped = new Set(skip.map((s) => Buffer.from(normalize(s).replace(/\/+$/, '')).toString('latin1')));
  const inDir = (fd: number, rel: Buffer | null) => {
    for (const e of readdirSync(descriptorPath(fd), { withFileTypes: true, encoding: 'buffer' })) {
      const relName = rel ? Buffer.concat([rel, Buffer.from('/'), e.name]) : e.name;
      if (skipped.has(relName.toString('latin1'))) continue;
      lchownSync(entryPath(fd, e.name), uid, gid);
      if (!e.isDirectory()) continue;
      const sub = openDirectoryAt(fd, e.name);
      try {
        inDir(sub, relName);
      } finally {
        closeSync(sub);
      }
    }
  };
  const top = openSync(dir, O_PATH | constants.O_NOFOLLOW | constants.O_DIRECTORY);
  try {
    inDir(top, null);
  } finally {
    closeSync(top);
  }
}
