import { withAppliedPatch } from './attemptTree.js';
import { isEmptyPatch, type PatchBytes } from './patchBytes.js';
import { nulRecords, runGit } from './safeGit.js';

/** What a changed path becomes in the tree: the base commit's entry (or none), or these bytes. */
export type BaseFileChoice = 'keep' | 'base' | { bytes: Buffer };

export interface BaseFileDecider {
  /** Pure choice from the path alone, or 'read' to be asked again with both sides' bytes. */
  byPath(path: string): 'keep' | 'base' | 'read';
  /** With the base's and the attempt's bytes (null: absent on that side). */
  byContent(path: string, base: Buffer | null, attempt: Buffer | null): BaseFileChoice;
}

const MAX_READ = 4 * 1024 * 1024;

/**
 * The commit an attempt's verdict runs on: the base commit with the attempt's patch applied,
 * except the changed paths `decide` gives back to the base (restored, or removed when the
 * attempt added them) or rewrites. Built from git objects only (apply --cached in a
 * runner-made view, then the index), so nothing of the attempt's worktree is read or followed;
 * null when no path is given back (the attempt's own tree is the verdict's).
 */
export async function treeWithBaseFiles(
  repo: string,
  base: string,
  patch: PatchBytes,
  decide: BaseFileDecider,
): Promise<{ commit: string; changed: string[] } | null> {
  if (isEmptyPatch(patch)) return null;
  return withAppliedPatch(repo, base, patch, async (view) => {
    const attemptTree = (await runGit(view, ['write-tree'])).text.trim();
    const paths = nulRecords((await runGit(view, ['diff', '--cached', '--no-renames', '--name-only', '-z', base, '--'])).text);
    const blob = async (spec: string) => {
      const r = await runGit(view, ['cat-file', 'blob', spec], { okExitCodes: [128], maxBytes: MAX_READ });
      return r.exitCode === 0 && !r.truncated ? r.stdout : null;
    };
    const given: string[] = [];
    for (const path of paths) {
      const byPath = decide.byPath(path);
      if (byPath === 'keep') continue;
      const choice = byPath === 'base' ? 'base' : decide.byContent(path, await blob(`${base}:${path}`), await blob(`:${path}`));
      if (choice === 'keep') continue;
      given.push(path);
      if (choice === 'base') {
        const entry = (await runGit(view, ['ls-tree', '-z', base, '--', path])).text.split('\0')[0] ?? '';
        const m = /^(\d+) \w+ ([0-9a-f]+)\t/.exec(entry);
        if (m) await runGit(view, ['update-index', '--add', '--replace', '--cacheinfo', `${m[1]},${m[2]},${path}`]);
        else await runGit(view, ['update-index', '--force-remove', '--', path]);
      } else {
        const sha = (await runGit(view, ['hash-object', '-w', '--stdin'], { input: choice.bytes })).text.trim();
        await runGit(view, ['update-index', '--add', '--replace', '--cacheinfo', `100644,${sha},${path}`]);
      }
    }
    const tree = (await runGit(view, ['write-tree'])).text.trim();
    if (given.length === 0 || tree === attemptTree) return null;
    const identity = {
      GIT_AUTHOR_NAME: 'Forge',
      GIT_AUTHOR_EMAIL: 'forge@localhost',
      GIT_COMMITTER_NAME: 'Forge',
      GIT_COMMITTER_EMAIL: 'forge@localhost',
    };
    const message = "forge: verdict tree (the base commit's tests)\n";
    const commit = (await runGit(view, ['commit-tree', tree, '-p', base], { input: message, env: identity })).text.trim();
    return { commit, changed: given };
  });
}
