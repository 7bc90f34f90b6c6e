import { existsSync, lstatSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import type { WorktreeSource } from './captureWorktreeDiff.js';
import { assertGitDataOutsideTree, discoverRepository, resolveCommit } from './repoLocation.js';

/**
 * The worktree a cell mounts, resolved before the cell runs. Everything the host does after
 * the cell (diff capture, git) uses these paths, never what the tree says then.
 */
export interface CellWorktree {
  /** Real path of the directory mounted read-write. */
  top: string;
  /** `<top>/.git` (file or directory), mounted read-only in every mode; null when absent. */
  gitEntry: string | null;
  /** Where the diff is taken from; null when no diff is wanted. */
  source: WorktreeSource | null;
  /** The directory `top` named when it was checked: a later step that opens it again compares. */
  identity?: { dev: number; ino: number };
  /** What `gitEntry` named when it was checked (a sandbox binding it read-only compares). */
  gitIdentity?: { dev: number; ino: number };
  /** The git data directories the diff reads by name (git dir, common dir, objects) as checked; the diff compares. */
  gitDataIdentity?: { path: string; dev: number; ino: number }[];
}

/** Checks that a path is an existing directory; throws InputError otherwise. */
export function requireDirectory(path: string): string {
  if (!existsSync(path)) throw new InputError(`worktree ${path} does not exist; pass an existing directory with --worktree`);
  try {
    if (!statSync(path).isDirectory()) throw new InputError(`worktree ${path} is not a directory`);
    return realpathSync(path);
  } catch (e) {
    if (e instanceof InputError) throw e;
    // Changed while it was checked (a directory swapped for a link meanwhile).
    throw new InputError(
      `worktree ${path} cannot be resolved (${(e as NodeJS.ErrnoException).code ?? 'error'}); is something changing it?`,
    );
  }
}

/**
 * Resolves a cell's worktree: any directory, or a git work tree top (with its HEAD as the
 * diff base) when a diff is wanted. Whenever the directory has a `.git`, its git data must lie
 * outside what the cell can write (`.git` itself is mounted read-only), diff or not.
 * `refuse` vets the location (system paths, masked paths) and returns why it is refused.
 * Throws InputError before anything runs.
 */
export async function resolveCellWorktree(
  spec: { worktree?: string | undefined; capture_diff: boolean },
  refuse: (top: string) => string | null = () => null,
): Promise<CellWorktree | null> {
  if (spec.worktree === undefined) return null;
  const top = requireDirectory(spec.worktree);
  const refused = refuse(top);
  if (refused) throw new InputError(`${refused}; pass a project directory with --worktree`);
  const { dev, ino } = statSync(top);
  const identity = { dev, ino };
  const gitEntry = join(top, '.git');
  const gitStat = lstatOrNull(gitEntry);
  const hasGit = gitStat !== null;
  if (!spec.capture_diff && !hasGit) return { top, gitEntry: null, source: null, identity };
  const loc = await discoverRepository(top);
  if (!loc) {
    if (!spec.capture_diff) throw new InputError(`${gitEntry} is not usable git data; remove it or repair the repository`);
    throw new InputError(`worktree ${spec.worktree} is not a git work tree; run "git init" there or pass --no-diff`);
  }
  if (loc.top !== top) {
    if (!spec.capture_diff && !hasGit) return { top, gitEntry: null, source: null, identity };
    throw new InputError(`worktree ${spec.worktree} is inside the git work tree ${loc.top}; pass its top (--worktree ${loc.top})`);
  }
  assertGitDataOutsideTree(loc);
  const gitIdentity = gitStat ? { dev: gitStat.dev, ino: gitStat.ino } : undefined;
  if (!spec.capture_diff) return { top, gitEntry, source: null, identity, gitIdentity };
  const head = await resolveCommit(loc, 'HEAD');
  if (!head) throw new InputError(`worktree ${spec.worktree} has no commit yet; commit once so a diff has a base, or pass --no-diff`);
  return { top, gitEntry, source: { location: loc, base: head }, identity, gitIdentity };
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
