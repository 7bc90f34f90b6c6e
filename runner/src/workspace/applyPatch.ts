import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostGit } from './hostGit.js';

export interface ApplyOutcome {
  applied: boolean;
  /** Files the patch touches. */
  files: string[];
  /** Files left with conflict markers (3-way merge could not resolve them). */
  conflicts: string[];
  /** How it went: "clean", "three-way", or "conflicts". */
  mode: 'clean' | 'three-way' | 'conflicts';
}

/**
 * Applies a patch (from captureApplicablePatch) to a git work tree: cleanly when the
 * preimage matches, else with a 3-way merge against the blobs the patch names, reporting
 * conflicts file by file. The target must be a tree the runner owns (its index is used).
 */
export async function applyPatch(tree: string, patch: string): Promise<ApplyOutcome> {
  if (patch.trim() === '') return { applied: true, files: [], conflicts: [], mode: 'clean' };
  const scratch = mkdtempSync(join(tmpdir(), 'forge-apply-'));
  const file = join(scratch, 'change.patch');
  writeFileSync(file, patch);
  const git = (args: string[]) => hostGit(args, { cwd: tree });
  try {
    const files = (await git(['apply', '--numstat', '-z', file])).stdout
      .split('\0')
      .filter(Boolean)
      .map((entry) => entry.split('\t').pop() ?? '')
      .filter(Boolean);
    try {
      await git(['apply', '--check', '--whitespace=nowarn', file]);
      await git(['apply', '--whitespace=nowarn', file]);
      return { applied: true, files, conflicts: [], mode: 'clean' };
    } catch {
      // Preimage differs: fall through to a 3-way merge.
    }
    try {
      await git(['apply', '--3way', '--whitespace=nowarn', file]);
      return { applied: true, files, conflicts: [], mode: 'three-way' };
    } catch {
      const unmerged = (await git(['diff', '--name-only', '--diff-filter=U', '-z'])).stdout.split('\0').filter(Boolean);
      return { applied: false, files, conflicts: unmerged.length > 0 ? unmerged : files, mode: 'conflicts' };
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
