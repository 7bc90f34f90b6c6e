import { existsSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { hostGit } from './hostGit.js';

export interface WorktreeInfo {
  /** Real path of the top of the work tree. */
  top: string;
  /** `.git` directory or file at the top (mounted read-only in cells). */
  gitMetadata: string;
  head: string;
}

/** Checks that a path is an existing directory; throws InputError otherwise. */
export function requireDirectory(path: string): string {
  if (!existsSync(path)) throw new InputError(`worktree ${path} does not exist; pass an existing directory with --worktree`);
  if (!statSync(path).isDirectory()) throw new InputError(`worktree ${path} is not a directory`);
  return realpathSync(path);
}

/** Resolves the top of a git work tree and its HEAD commit, or throws InputError. */
export async function inspectWorktree(path: string): Promise<WorktreeInfo> {
  const dir = requireDirectory(path);
  let top: string;
  let head: string;
  try {
    const out = await hostGit(['rev-parse', '--show-toplevel'], { cwd: dir });
    top = realpathSync(out.stdout.trim());
  } catch {
    throw new InputError(`worktree ${path} is not a git work tree; run "git init" there or pass --no-diff`);
  }
  if (top !== dir) {
    throw new InputError(`worktree ${path} is inside the git work tree ${top}; pass its top (--worktree ${top})`);
  }
  try {
    head = (await hostGit(['rev-parse', '--verify', 'HEAD^{commit}'], { cwd: dir })).stdout.trim();
  } catch {
    throw new InputError(`worktree ${path} has no commit yet; commit once so a diff has a base, or pass --no-diff`);
  }
  return { top, gitMetadata: join(top, '.git'), head };
}

/**
 * The worktree a cell mounts: a git work tree (with its HEAD) when a diff is wanted, any
 * directory otherwise, or none. Throws InputError before anything runs.
 */
export async function resolveCellWorktree(spec: { worktree?: string | undefined; capture_diff: boolean }): Promise<{ top: string; gitMetadata: string | null } | null> {
  if (spec.worktree === undefined) return null;
  return spec.capture_diff ? inspectWorktree(spec.worktree) : { top: requireDirectory(spec.worktree), gitMetadata: null };
}
