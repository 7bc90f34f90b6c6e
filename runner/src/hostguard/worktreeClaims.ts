import { lstatSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { ATTEMPTS_DIR_NAME } from './attemptsDirName.js';
import { isInside } from './pathInside.js';
import { withPinnedDirectory } from './pinnedDirectory.js';

/** What a running cell holds: its tree, the `.git` directory it sees read-only, the git data its diff reads. */
export interface TreeClaim {
  top: string;
  /** `<top>/.git` when it was a directory at the check (mounted read-only in the cell), else null. */
  roGit: string | null;
  /** Git directory, common directory and objects the runner reads by name after the cell. */
  gitData: string[];
  /**
   * The same, by identity: device:inode of every directory from / down to the worktree (the
   * worktree last), of the read-only .git, and down to each git-data directory. A tree
   * reached through two paths (a bind mount) is one tree here. Empty when it could not be read.
   * `attempts`: the read-only .git's forge-cells directory, when there was one at the claim.
   */
  ids: { top: string[]; roGit: string | null; attempts?: string | null; gitData: string[][] };
}

/**
 * Pure: whether cells holding `a` and `b` could touch what the other's host steps use: one
 * tree is the other or inside it, or one's git data is inside the other's tree. A tree's
 * `.git` that was a directory at the check is read-only in that cell (one it makes later is
 * not): git data there is out of its reach. A tree inside another's `.git` is allowed only in
 * its forge-cells directory (attempt worktrees: <repo>/.git/forge-cells/), where that git
 * reads nothing: elsewhere (.git/info, .git/objects/info) the inner cell could write files the
 * outer cell's diff reads (attributes, alternates).
 */
export function claimsConflict(a: TreeClaim, b: TreeClaim): boolean {
  const attemptsOf = (c: TreeClaim) => (c.roGit ? join(c.roGit, ATTEMPTS_DIR_NAME) : null);
  const treeIn = (path: string, c: TreeClaim) => isInside(path, c.top) && !(attemptsOf(c) && isInside(path, attemptsOf(c)!));
  const dataIn = (path: string, c: TreeClaim) => isInside(path, c.top) && !(c.roGit && isInside(path, c.roGit));
  const byPath = treeIn(b.top, a) || treeIn(a.top, b) || a.gitData.some((g) => dataIn(g, b)) || b.gitData.some((g) => dataIn(g, a));
  // A directory is inside a tree when the tree's own identity is on the chain down to it.
  const within = (chain: string[], c: TreeClaim, exempt: string | null | undefined) => {
    const top = c.ids.top.at(-1);
    return top !== undefined && chain.includes(top) && !(exempt && chain.includes(exempt));
  };
  const byIdentity =
    within(b.ids.top, a, a.ids.attempts) ||
    within(a.ids.top, b, b.ids.attempts) ||
    a.ids.gitData.some((ch) => within(ch, b, b.ids.roGit)) ||
    b.ids.gitData.some((ch) => within(ch, a, a.ids.roGit));
  return byPath || byIdentity;
}

interface Claim extends TreeClaim {
  pid: number;
  /** The runner process's start time (field 22 of /proc/<pid>/stat): a reused pid is not it. */
  start: string;
}

/**
 * Registers that a cell of this runner works on `tree` (under `dir`, one file per cell) until
 * the returned release is called, and refuses one that conflicts with a running cell's.
 * A cell can rename anything in its worktree: a second cell on the same tree or one inside it
 * could have the runner's by-path steps (the sandbox's bind mount, the diff) redirected
 * outside while they run. The claim is written before the others are read, so of two cells
 * starting at once at least one sees the other. Claims of runners that are gone are removed.
 */
export function claimWorktree(dir: string, cellId: string, tree: TreeClaim): () => void {
  const { top } = tree;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const mine = join(dir, `${cellId}.json`);
  const claim: Claim = { ...tree, pid: process.pid, start: processStart(process.pid) ?? '' };
  writeFileSync(mine, JSON.stringify(claim), { flag: 'wx', mode: 0o600 });
  const release = () => {
    try {
      unlinkSync(mine);
    } catch {
      /* gone already */
    }
  };
  for (const name of readdirSync(dir)) {
    if (name === `${cellId}.json` || !name.endsWith('.json')) continue;
    const other = readClaim(join(dir, name));
    if (!other) continue;
    if (processStart(other.pid) !== other.start) {
      try {
        unlinkSync(join(dir, name));
      } catch {
        /* another runner removed it */
      }
      continue;
    }
    if (claimsConflict(tree, other)) {
      release();
      throw new InputError(
        `worktree ${top} ${top === other.top ? 'is' : 'overlaps'} the worktree ${other.top} of ${name.slice(0, -5)}, a cell still running (runner pid ${other.pid}): cells on one tree (or on one inside another, or on the other's git data) could redirect each other's host steps; wait for it to end or use another worktree`,
      );
    }
  }
  return release;
}

function readClaim(path: string): Claim | null {
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as Partial<Claim>;
    const ok =
      typeof c.pid === 'number' &&
      typeof c.start === 'string' &&
      typeof c.top === 'string' &&
      (c.roGit === null || typeof c.roGit === 'string') &&
      Array.isArray(c.gitData) &&
      c.gitData.every((g) => typeof g === 'string');
    if (!ok) return null;
    const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((v) => typeof v === 'string');
    const ids = c.ids;
    const idsOk =
      ids !== undefined &&
      strings(ids.top) &&
      (ids.roGit === null || typeof ids.roGit === 'string') &&
      (ids.attempts === undefined || ids.attempts === null || typeof ids.attempts === 'string') &&
      Array.isArray(ids.gitData) &&
      ids.gitData.every(strings);
    return { ...(c as Claim), ids: idsOk ? ids : { top: [], roGit: null, gitData: [] } };
  } catch {
    return null;
  }
}

function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ")".
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** The parts of a cell's checked worktree a claim is made of (a CellWorktree has them). */
export interface ClaimedTree {
  top: string;
  /** `<top>/.git` when the worktree has one. */
  gitEntry: string | null;
  /** Where its diff reads git data from, when a diff is captured. */
  source: { location: { indexFile: string; commonDir: string; objectsDir: string } } | null;
}

/** What a cell on this worktree claims (its `.git` looked at now, without following a link). */
export function treeClaimOf(worktree: ClaimedTree): TreeClaim {
  let roGit: string | null = null;
  if (worktree.gitEntry) {
    try {
      if (lstatSync(worktree.gitEntry).isDirectory()) roGit = worktree.gitEntry;
    } catch {
      /* gone: nothing read-only there */
    }
  }
  const loc = worktree.source?.location;
  const gitData = loc ? [...new Set([dirname(loc.indexFile), loc.commonDir, loc.objectsDir])] : [];
  return {
    top: worktree.top,
    roGit,
    gitData,
    ids: {
      top: identityChain(worktree.top),
      roGit: roGit ? (identityChain(roGit).at(-1) ?? null) : null,
      attempts:
        roGit && isDirectory(join(roGit, ATTEMPTS_DIR_NAME)) ? (identityChain(join(roGit, ATTEMPTS_DIR_NAME)).at(-1) ?? null) : null,
      gitData: gitData.map(identityChain),
    },
  };
}

/** device:inode of each directory from / down to `path`, walked without following links; empty when it cannot be. */
function identityChain(path: string): string[] {
  try {
    return withPinnedDirectory(path, undefined, (_fd, steps) => steps.map((s) => `${s.dev}:${s.ino}`));
  } catch {
    return [];
  }
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}
