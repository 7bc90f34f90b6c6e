import { lstatSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';

/** A tool call the model got wrong: the message goes back to the model, the run goes on. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
}

/**
 * Resolves a path the model gave to a file inside the attempt's worktree, or throws a
 * ToolError. Refused: empty or NUL-containing paths, anything that leaves the worktree
 * (`..`, absolute paths elsewhere, symlinks pointing out), and git metadata.
 */
export function resolveInWorktree(worktree: string, requested: unknown): string {
  if (typeof requested !== 'string' || requested.trim() === '') throw new ToolError('path must be a non-empty string relative to the repository root');
  if (requested.includes('\0')) throw new ToolError('path must not contain NUL bytes');
  const root = realpathSync(worktree);
  const candidate = isAbsolute(requested) ? normalize(requested) : resolve(root, requested);
  const rel = relative(root, candidate);
  if (rel.startsWith('..') || isAbsolute(rel)) throw new ToolError(`path ${requested} is outside the repository; use a path relative to its root`);
  if (rel.split(sep).includes('.git')) throw new ToolError(`path ${requested} is git metadata; the repository's history is not editable`);
  // Symlinks: the deepest existing ancestor (or the file itself) must really be inside.
  let probe = candidate;
  for (;;) {
    if (exists(probe)) break;
    const parent = dirname(probe);
    if (parent === probe) break;
    probe = parent;
  }
  const real = realpathSync(probe);
  const realRel = relative(root, real);
  if (realRel.startsWith('..') || isAbsolute(realRel)) throw new ToolError(`path ${requested} leads outside the repository through a symbolic link`);
  return rel === '' ? root : join(root, rel);
}

function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}
