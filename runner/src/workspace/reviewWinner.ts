import { existsSync, readdirSync } from 'node:fs';
import { rememberCheckoutOwners } from '../hostguard/checkoutOwnership.js';
import { join } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { applyPatchFile } from './applyPatch.js';
import { literalPattern } from './applyIntoCheckout.js';
import { numstatNames } from './gitPaths.js';
import { assertRealDirectory, attemptsDir, BRANCH_PREFIX, destroyAttemptWorktree, locateRepository } from './attemptWorktree.js';
import { displayText, isUtf8Text } from '../hostguard/displayText.js';
import { isEmptyPatch, type PatchBytes } from './patchBytes.js';
import { repoTarget } from './repoLocation.js';
import { type GitCallOptions, type GitOutput, runGit } from './safeGit.js';

/** Git on the user's repository (objects and refs only here: never its working tree's content). */
async function userGit(repo: string, args: string[], opts: GitCallOptions = {}): Promise<GitOutput> {
  return runGit(repoTarget(await locateRepository(repo)), args, opts);
}

export interface ReviewFile {
  path: string;
  status: 'added' | 'modified' | 'deleted';
}

export interface ApplyFileOutcome {
  path: string;
  ok: boolean;
  reason: string | null;
}

/** Review content is shown in an editor: larger files are named, not loaded. */
export const REVIEW_CONTENT_LIMIT = 4 * 1024 * 1024;

export const winnerBranchName = (runId: string, winnerIndex: number): string => `${BRANCH_PREFIX}${runId}-a${winnerIndex}`;

async function branchExists(repo: string, branch: string): Promise<boolean> {
  return (await userGit(repo, ['branch', '--list', '--end-of-options', branch])).text.trim() !== '';
}

/** The files the winner changes, base commit vs the winner branch (renames as delete + add). */
export async function listReviewFiles(repo: string, base: string, branch: string): Promise<ReviewFile[]> {
  if (!(await branchExists(repo, branch)))
    throw new InputError(`the winner branch ${branch} is gone (discarded or deleted); nothing to review`);
  return listChangedFiles(repo, base, branch);
}

/** The files `rev` (a commit or a tree, e.g. attemptTree's) changes against `base`. */
export async function listChangedFiles(repo: string, base: string, rev: string): Promise<ReviewFile[]> {
  const out = (
    await userGit(repo, ['diff', '--no-ext-diff', '--no-textconv', '--name-status', '--no-renames', '-z', base, rev, '--'])
  ).text.split('\0');
  const files: ReviewFile[] = [];
  for (let i = 0; i + 1 < out.length; i += 2) {
    const code = out[i]!;
    const path = out[i + 1]!;
    if (!code || !path) continue;
    files.push({ path, status: code.startsWith('A') ? 'added' : code.startsWith('D') ? 'deleted' : 'modified' });
  }
  return files;
}

/**
 * One side of a reviewed file, read from git objects (never the working tree, so a symlink
 * in the repo cannot point the review at a host file). Binary and oversized files are named.
 */
export async function readReviewContent(repo: string, rev: string, path: string): Promise<{ content: string | null; note: string | null }> {
  const spec = `${rev}:${path}`;
  const type = await userGit(repo, ['cat-file', '-t', spec]).then(
    (r) => r.text.trim(),
    () => null,
  );
  if (type === null) return { content: null, note: 'not present on this side' };
  if (type !== 'blob') return { content: null, note: `a ${type}, not a file` };
  const size = Number((await userGit(repo, ['cat-file', '-s', spec])).text.trim());
  if (size > REVIEW_CONTENT_LIMIT) return { content: null, note: `${size} bytes: too large to show (limit ${REVIEW_CONTENT_LIMIT})` };
  const mode = (await userGit(repo, ['ls-tree', rev, '--', path])).text.split(' ')[0];
  const raw = (await userGit(repo, ['cat-file', 'blob', spec], { maxBytes: REVIEW_CONTENT_LIMIT })).stdout;
  if (mode === '120000') return { content: `symbolic link -> ${displayText(raw)}`, note: 'symbolic link' };
  if (raw.subarray(0, 8000).includes(0)) return { content: null, note: `binary file (${size} bytes)` };
  if (!isUtf8Text(raw)) return { content: displayText(raw), note: 'not valid UTF-8: bytes that are not are shown as \\xNN' };
  return { content: raw.toString('utf8'), note: null };
}

/**
 * Applies the winner's patch to the user's working tree all or nothing: every file is
 * checked first, and when any file would not apply cleanly nothing is written and each
 * file's outcome is reported.
 */
export async function applyToWorkspace(repo: string, patch: PatchBytes): Promise<{ applied: boolean; files: ApplyFileOutcome[] }> {
  if (isEmptyPatch(patch)) return { applied: true, files: [] };
  const loc = await locateRepository(repo);
  return applyPatchFile(loc, patch, async (git, file) => {
    const paths = numstatNames((await git(['apply', '--numstat', '-z', file])).stdout);
    const ok = await git(['apply', '--check', '--whitespace=nowarn', file]).then(
      () => true,
      () => false,
    );
    if (ok) {
      // A root runner writes new inodes as root: they go back to their owners afterwards.
      const restoreOwners = rememberCheckoutOwners(loc.top, paths);
      await git(['apply', '--whitespace=nowarn', file]);
      restoreOwners();
      return { applied: true, files: paths.map((path) => ({ path, ok: true, reason: null })) };
    }
    const files: ApplyFileOutcome[] = [];
    for (const path of paths) {
      const err = await git(['apply', '--check', '--whitespace=nowarn', `--include=${literalPattern(path)}`, file]).then(
        () => null,
        (e: Error) => e.message,
      );
      files.push({ path, ok: err === null, reason: err === null ? null : conflictReason(err) });
    }
    return { applied: false, files };
  });
}

function conflictReason(gitError: string): string {
  const m = /error: (.*)$/.exec(gitError);
  return (m?.[1] ?? gitError).slice(0, 300);
}

/** Removes the winner branch and any worktree of the run left in the repository's attempts directory. */
export async function discardRun(repo: string, runId: string, branch: string | null): Promise<string[]> {
  const removed: string[] = [];
  const cellsDir = attemptsDir(await locateRepository(repo));
  assertRealDirectory(cellsDir);
  if (existsSync(cellsDir)) {
    for (const name of readdirSync(cellsDir)) {
      if (!name.startsWith(`${runId}-`)) continue;
      const wtBranch = `${BRANCH_PREFIX}${name}`;
      await destroyAttemptWorktree({ repo, path: join(cellsDir, name), branch: wtBranch });
      removed.push(`worktree ${join(cellsDir, name)}`);
    }
  }
  if (branch && (await branchExists(repo, branch))) {
    await userGit(repo, ['branch', '-D', '--end-of-options', branch]);
    removed.push(`branch ${branch}`);
  }
  return removed;
}
