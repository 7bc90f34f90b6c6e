import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { copiedFromOutside } from './applyPatch.js';
import { locateRepository } from './attemptWorktree.js';
import { rememberObjectDirs } from '../hostguard/checkoutOwnership.js';
import { isEmptyPatch, type PatchBytes } from './patchBytes.js';
import { repoTarget } from './repoLocation.js';
import { type GitView, runGit, withGitView } from './safeGit.js';

/**
 * The tree an attempt's stored patch makes of the base commit, written into the repository's
 * object store (objects only: no ref, no working tree, no index of the user's changes). Any
 * finished attempt can then be reviewed like the winner, from git objects, after its worktree
 * and branch are gone. The patch is applied through a runner-made view (apply --cached: no
 * filters or attributes from the repository act on it).
 */
export async function attemptTree(repo: string, base: string, patch: PatchBytes): Promise<string> {
  const loc = await locateRepository(repo);
  if (isEmptyPatch(patch))
    return (await runGit(repoTarget(loc), ['rev-parse', '--verify', '--end-of-options', `${base}^{tree}`])).text.trim();
  return withAppliedPatch(repo, base, patch, async (view) => (await runGit(view, ['write-tree'])).text.trim());
}

/**
 * `work` in a runner-made view whose index holds the base commit with the attempt's patch
 * applied (apply --cached: no filters or attributes from the repository act on it); objects
 * it writes land in the repository's object store.
 */
export async function withAppliedPatch<T>(repo: string, base: string, patch: PatchBytes, work: (view: GitView) => Promise<T>): Promise<T> {
  const loc = await locateRepository(repo);
  const outside = copiedFromOutside(patch);
  if (outside)
    throw new InputError(`the attempt's patch copies or renames from ${JSON.stringify(outside)}, outside the repository: not shown`);
  const scratch = mkdtempSync(join(tmpdir(), 'forge-attempt-tree-'));
  const file = join(scratch, 'attempt.patch');
  writeFileSync(file, patch);
  mkdirSync(join(scratch, 'empty'));
  // A root runner's new loose-object directories go back to the repository's owner.
  const restoreObjects = rememberObjectDirs(loc.objectsDir);
  try {
    return await withGitView(
      { objectsDir: loc.objectsDir, head: base, workTree: join(scratch, 'empty'), objectFormat: loc.objectFormat },
      async (view) => {
        await runGit(view, ['apply', '--cached', '--whitespace=nowarn', file]);
        return work(view);
      },
    );
  } finally {
    restoreObjects();
    rmSync(scratch, { recursive: true, force: true });
  }
}
