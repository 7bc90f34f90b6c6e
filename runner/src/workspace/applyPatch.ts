import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handOverToCellUser } from '../hostguard/cellUser.js';
import { cUnquote, latin1ToText, numstatNames } from './gitPaths.js';
import { isEmptyPatch, type PatchBytes, patchStructure } from './patchBytes.js';
import { type RepoLocation, resolveCommit } from './repoLocation.js';
import { type GitCallOptions, type GitOutput, nulRecords, runGit, withGitView } from './safeGit.js';

export interface ApplyOutcome {
  applied: boolean;
  /** Files the patch touches. */
  files: string[];
  /** Files left with conflict markers (3-way merge could not resolve them). */
  conflicts: string[];
  /** How it went: "clean", "three-way", or "conflicts". */
  mode: 'clean' | 'three-way' | 'conflicts';
}

type ViewGit = (args: string[], opts?: GitCallOptions) => Promise<GitOutput>;

/**
 * Runs `work` with a patch in a runner-owned file and git pointed at `loc`'s work tree
 * through a view (no filters, merge drivers or attributes from the tree: the patch's bytes
 * land as they are). `head` defaults to the tree's HEAD.
 */
export async function applyPatchFile<T>(
  loc: RepoLocation,
  patch: PatchBytes,
  work: (git: ViewGit, file: string) => Promise<T>,
  head?: string,
): Promise<T> {
  const outside = copiedFromOutside(patch);
  if (outside) throw new Error(`the patch copies or renames from ${JSON.stringify(outside)}, outside the repository; it is not applied`);
  const base = head ?? (await resolveCommit(loc, 'HEAD'));
  if (!base) throw new Error(`${loc.top} has no commit to apply a patch on`);
  const scratch = mkdtempSync(join(tmpdir(), 'forge-apply-'));
  const file = join(scratch, 'change.patch');
  writeFileSync(file, patch);
  try {
    return await withGitView(
      { objectsDir: loc.objectsDir, head: base, workTree: loc.top, indexFrom: loc.indexFile, objectFormat: loc.objectFormat },
      (view) => work((args, opts) => runGit(view, args, opts), file),
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Pure: the first `copy from` / `rename from` source of a patch that is not a plain path inside
 * the tree (absolute, or with a `..` component), or null. git apply checks where a patch
 * writes but reads a copy's source wherever it points: a stored patch must not make it read a
 * host file into the repository.
 */
export function copiedFromOutside(patch: PatchBytes | string): string | null {
  for (const m of patchStructure(patch).matchAll(/^(?:copy|rename) from (.*)$/gm)) {
    const raw = m[1]!;
    // Read as git reads it: "\057tmp/x" is /tmp/x. A quoted name git would not write is refused too.
    let path: string;
    try {
      path = latin1ToText(cUnquote(raw));
    } catch {
      return raw;
    }
    if (path.startsWith('/') || path.split('/').includes('..')) return path;
  }
  return null;
}

/**
 * Applies a patch (from captureApplicablePatch) to an attempt worktree the runner owns:
 * cleanly when the preimage matches, else with a 3-way merge against the blobs the patch
 * names, reporting conflicts file by file. New files go to the cell user like the rest.
 */
export async function applyPatch(wt: { location: RepoLocation; baseCommit: string }, patch: PatchBytes): Promise<ApplyOutcome> {
  if (isEmptyPatch(patch)) return { applied: true, files: [], conflicts: [], mode: 'clean' };
  try {
    return await applyPatchFile(
      wt.location,
      patch,
      async (git, file) => {
        const files = numstatNames((await git(['apply', '--numstat', '-z', file])).stdout);
        try {
          await git(['apply', '--check', '--whitespace=nowarn', file]);
          await git(['apply', '--whitespace=nowarn', file]);
          return { applied: true, files, conflicts: [], mode: 'clean' as const };
        } catch {
          // Preimage differs: fall through to a 3-way merge.
        }
        try {
          await git(['apply', '--3way', '--whitespace=nowarn', file]);
          return { applied: true, files, conflicts: [], mode: 'three-way' as const };
        } catch {
          const unmerged = nulRecords((await git(['diff', '--name-only', '--diff-filter=U', '-z'])).text);
          return { applied: false, files, conflicts: unmerged.length > 0 ? unmerged : files, mode: 'conflicts' as const };
        }
      },
      wt.baseCommit,
    );
  } finally {
    handOverToCellUser(wt.location.top);
  }
}
