import { lstatSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorktreeDiff } from '../protocol/cellResult.js';
import { hostGit } from './hostGit.js';

export interface DiffCaps {
  /** Most bytes of patch text returned. */
  patchBytes: number;
  /** Untracked files larger than this are named in `omitted`, not diffed. */
  untrackedFileBytes: number;
  /** Files larger than this are diffed as binary (named, not dumped). */
  textFileBytes: number;
  /** Most file entries listed. */
  maxFiles: number;
}

export const DEFAULT_DIFF_CAPS: DiffCaps = {
  patchBytes: 1024 * 1024,
  untrackedFileBytes: 8 * 1024 * 1024,
  textFileBytes: 1024 * 1024,
  maxFiles: 2000,
};

const STATUS: Record<string, WorktreeDiff['files'][number]['status']> = {
  A: 'added', M: 'modified', D: 'deleted', R: 'renamed', C: 'added', T: 'type-changed',
};

/**
 * Diff of a work tree against its HEAD, untracked files included, without touching the
 * user's index: a throwaway index holds HEAD plus intent-to-add entries for untracked files.
 */
export async function captureWorktreeDiff(worktree: string, caps: DiffCaps = DEFAULT_DIFF_CAPS, base = 'HEAD'): Promise<WorktreeDiff> {
  return withScratchIndex(worktree, base, async (git) => {
    const untracked = await git(['ls-files', '-z', '--others', '--exclude-standard'], 64 * 1024 * 1024);
    const omitted: WorktreeDiff['omitted'] = [];
    const include: string[] = [];
    for (const path of untracked.stdout.split('\0').filter(Boolean)) {
      const reason = untrackedExclusion(worktree, path, caps);
      if (reason) omitted.push({ path, reason });
      else include.push(path);
    }
    if (include.length > 0) {
      await git(['add', '--intent-to-add', '--pathspec-from-file=-', '--pathspec-file-nul'], undefined, include.join('\0') + '\0');
    }
    const diffArgs = ['-c', `core.bigFileThreshold=${caps.textFileBytes}`, 'diff', '--no-color', '--no-ext-diff', '--no-textconv', '--ignore-submodules=all', '-M'];
    const patch = await git([...diffArgs], caps.patchBytes);
    const names = await git([...diffArgs, '--name-status', '-z'], 8 * 1024 * 1024);
    const numstat = await git([...diffArgs, '--numstat', '-z'], 8 * 1024 * 1024);
    const binary = parseBinaryPaths(numstat.stdout);
    const files = parseNameStatus(names.stdout).slice(0, caps.maxFiles).map((f) => ({ ...f, binary: binary.has(f.path) }));
    return { patch: patch.stdout, truncated: patch.truncated, bytes: patch.bytes, files, omitted };
  });
}

type ScratchGit = (args: string[], maxBytes?: number, input?: string) => ReturnType<typeof hostGit>;

/**
 * Runs `work` with git pointed at a throwaway index holding `base`: diffs against it see
 * the work tree's real state without the user's index ever being read or written.
 */
async function withScratchIndex<T>(worktree: string, base: string, work: (git: ScratchGit) => Promise<T>): Promise<T> {
  const scratch = mkdtempSync(join(tmpdir(), 'forge-diff-'));
  const env = { GIT_INDEX_FILE: join(scratch, 'index') };
  const git: ScratchGit = (args, maxBytes, input) =>
    hostGit(args, { cwd: worktree, env, ...(maxBytes !== undefined ? { maxBytes } : {}), ...(input !== undefined ? { input } : {}) });
  try {
    await git(['read-tree', base]);
    return await work(git);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Largest patch captured for applying elsewhere. */
export const MAX_APPLY_PATCH_BYTES = 64 * 1024 * 1024;

/**
 * The full-fidelity patch of a work tree against `base` (binary contents included,
 * untracked files included), for applying to another tree. Throws when it exceeds the cap.
 */
export async function captureApplicablePatch(worktree: string, base: string): Promise<string> {
  return withScratchIndex(worktree, base, async (git) => {
    const untracked = await git(['ls-files', '-z', '--others', '--exclude-standard'], 64 * 1024 * 1024);
    const include = untracked.stdout.split('\0').filter((p) => p && !p.endsWith('/'));
    if (include.length > 0) {
      await git(['add', '--intent-to-add', '--pathspec-from-file=-', '--pathspec-file-nul'], undefined, include.join('\0') + '\0');
    }
    const patch = await git(['diff', '--binary', '--full-index', '--no-color', '--no-ext-diff', '--no-textconv', '--ignore-submodules=all', '-M'], MAX_APPLY_PATCH_BYTES);
    if (patch.truncated) throw new Error(`the patch of ${worktree} is larger than ${MAX_APPLY_PATCH_BYTES} bytes`);
    return patch.stdout;
  });
}

function untrackedExclusion(worktree: string, path: string, caps: DiffCaps): string | null {
  // A directory entry here is a nested repository: diffing it would run git inside a tree the cell wrote.
  if (path.endsWith('/')) return 'nested git repository';
  try {
    const st = lstatSync(join(worktree, path));
    if (st.isFile() && st.size > caps.untrackedFileBytes) return `larger than ${caps.untrackedFileBytes} bytes (${st.size})`;
    if (!st.isFile() && !st.isSymbolicLink()) return 'not a regular file';
  } catch {
    return 'vanished while diffing';
  }
  return null;
}

/** Pure: `git diff --name-status -z` output -> entries (renames name the new path). */
export function parseNameStatus(text: string): { path: string; status: WorktreeDiff['files'][number]['status'] }[] {
  const parts = text.split('\0');
  const out: { path: string; status: WorktreeDiff['files'][number]['status'] }[] = [];
  for (let i = 0; i < parts.length; ) {
    const code = parts[i++];
    if (!code) continue;
    const letter = code[0] ?? '';
    if (letter === 'R' || letter === 'C') {
      i++; // old path
      const path = parts[i++];
      if (path !== undefined) out.push({ path, status: STATUS[letter] ?? 'modified' });
    } else {
      const path = parts[i++];
      if (path !== undefined) out.push({ path, status: STATUS[letter] ?? 'modified' });
    }
  }
  return out;
}

/** Pure: `git diff --numstat -z` -> paths git treated as binary ("-\t-\t"). */
export function parseBinaryPaths(text: string): Set<string> {
  const parts = text.split('\0');
  const binary = new Set<string>();
  for (let i = 0; i < parts.length; ) {
    const head = parts[i++];
    if (!head) continue;
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(head);
    if (!m) continue;
    let path = m[3] ?? '';
    if (path === '') {
      i++; // rename: old path, then new path
      path = parts[i++] ?? '';
    }
    if (m[1] === '-' && m[2] === '-') binary.add(path);
  }
  return binary;
}
