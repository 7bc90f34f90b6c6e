import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { commitWorktreeChanges, MAX_APPLY_PATCH_BYTES, type WorktreeSource } from '../../workspace/captureWorktreeDiff.js';
import { isSafeIndexPath, nulRecords, runGit, type GitTarget, withGitView } from '../../workspace/safeGit.js';
import type { ReturnedFrame } from './swarmCellScript.js';
import { SWARM_TOOLS_DIR, SWARM_WRAPPER_SCRIPT } from './swarmCellScript.js';
import { readTar, type TarEntry, writeTar } from './tarArchive.js';
import { gitTreeEntries } from './gitTreeEntries.js';
import { rememberCheckoutOwners, rememberObjectDirs } from '../../hostguard/checkoutOwnership.js';

/**
 * What travels between the runner and a swarm cell, made and read with git so nothing of the
 * runner's disk but the repository's own content leaves, and what comes back enters the
 * worktree only as a patch `git apply` checks (no write through a link, nothing outside).
 */

/** The largest base tree sent as an image layer. */
export const MAX_BASE_TREE_BYTES = 1024 * 1024 * 1024;

export interface CellInputState {
  /** The commit the worktree's HEAD names (its tree is the base image's). */
  base: string;
  /** A commit holding the worktree as the cell starts: the base plus the attempt's changes. */
  start: string;
}

function repoTarget(src: WorktreeSource): GitTarget {
  return { gitDir: src.location.commonDir, objectsDir: src.location.objectsDir };
}

/** The worktree as it is now, recorded as one commit on top of its base (nothing in the worktree changes). */
export async function recordCellInput(src: WorktreeSource): Promise<CellInputState> {
  const restoreObjects = rememberObjectDirs(src.location.objectsDir);
  try {
    const { commit } = await commitWorktreeChanges(src, 'forge swarm cell input\n');
    return { base: src.base, start: commit };
  } finally {
    restoreObjects();
  }
}

export async function treeOf(src: WorktreeSource, commit: string): Promise<string> {
  return (await runGit(repoTarget(src), ['rev-parse', `${commit}^{tree}`])).text.trim();
}

/**
 * The files of `commit` (all, or the `paths` given) as git stores them: never through `git
 * archive`, whose export-ignore and export-subst the tree itself controls (a file left out of
 * every cell, or rewritten in it, while the patch carries something else).
 */
async function committedFiles(src: WorktreeSource, commit: string, paths: string[] | null, uid: number): Promise<TarEntry[]> {
  if (paths && paths.length === 0) return [];
  return gitTreeEntries(repoTarget(src), commit, {
    ...(paths ? { only: new Set(paths) } : {}),
    maxBytes: MAX_BASE_TREE_BYTES,
    uid,
    gid: uid,
    mtime: Math.floor(Date.now() / 1000),
  });
}

/**
 * The layer on top of the cell's image: the base tree at `workdir` owned by the cell user, the
 * directories above it, and the runner's static busybox and wrapper under /forge (root's).
 */
export async function baseLayerTar(
  src: WorktreeSource,
  commit: string,
  workdir: string,
  uid: number,
  busyboxPath: string,
): Promise<Buffer> {
  const mtime = Math.floor(Date.now() / 1000);
  const root = { uid: 0, gid: 0, mtime };
  const entries: TarEntry[] = [];
  const parts = workdir.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    entries.push({ name: dir, type: 'dir', mode: dir === 'tmp' ? 0o1777 : 0o755, ...root });
  }
  const top = parts.join('/');
  entries.push({ name: top, type: 'dir', mode: 0o755, uid, gid: uid, mtime });
  for (const e of await committedFiles(src, commit, null, uid)) entries.push({ ...e, name: posix.join(top, e.name) });
  // The runner's own files last: whatever the tree's entries did on extraction, these are written after them.
  entries.push(
    { name: SWARM_TOOLS_DIR.slice(1), type: 'dir', mode: 0o755, ...root },
    { name: `${SWARM_TOOLS_DIR.slice(1)}/busybox`, type: 'file', mode: 0o755, ...root, data: readFileSync(busyboxPath) },
    { name: `${SWARM_TOOLS_DIR.slice(1)}/wrapper.sh`, type: 'file', mode: 0o644, ...root, data: Buffer.from(SWARM_WRAPPER_SCRIPT) },
  );
  return writeTar(entries);
}

/**
 * The cell's input: the files the attempt changed (as they are at `start`) and the paths it
 * deleted, relative to the base tree. Small for an attempt; it travels as a Swarm config.
 */
export async function cellInputTar(src: WorktreeSource, input: CellInputState): Promise<Buffer> {
  const changes = nulRecords(
    (await runGit(repoTarget(src), ['diff-tree', '-r', '-z', '--no-renames', '--name-status', input.base, input.start])).text,
  );
  const deleted: string[] = [];
  const present: string[] = [];
  for (let i = 0; i + 1 < changes.length; i += 2) (changes[i] === 'D' ? deleted : present).push(changes[i + 1]!);
  // The attempt's files as the snapshot commit holds them: the worktree's own bytes.
  const files = await committedFiles(src, input.start, present, 0);
  const mtime = Math.floor(Date.now() / 1000);
  return writeTar([
    { name: 'overlay.tar', type: 'file', mode: 0o600, uid: 0, gid: 0, mtime, data: files.length > 0 ? writeTar(files) : Buffer.alloc(0) },
    { name: 'deleted', type: 'file', mode: 0o600, uid: 0, gid: 0, mtime, data: Buffer.from(deleted.map((d) => `${d}\0`).join('')) },
  ]);
}

/** Pure: the directories above a relative path ("a/b/c" -> "a", "a/b"). */
function ancestors(path: string): string[] {
  const parts = path.split('/');
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/**
 * Writes each content as a blob in one git call (a cell may send back tens of thousands of
 * files): the contents go to numbered files in the runner's own scratch directory, never to
 * a name the cell chose, and `hash-object --no-filters` applies no attribute to them.
 */
async function hashBlobs(target: GitTarget, scratch: string, contents: readonly Buffer[]): Promise<string[]> {
  if (contents.length === 0) return [];
  const dir = join(scratch, 'blobs');
  mkdirSync(dir, { mode: 0o700 });
  const names = contents.map((c, i) => {
    const name = join(dir, String(i));
    writeFileSync(name, c, { mode: 0o600, flag: 'wx' });
    return name;
  });
  const out = await runGit(target, ['hash-object', '-w', '--no-filters', '--stdin-paths'], {
    input: names.map((n) => `${n}\n`).join(''),
  });
  const oids = out.text.split('\n').filter(Boolean);
  if (oids.length !== contents.length) throw new Error(`git hash-object wrote ${oids.length} of ${contents.length} files`);
  return oids;
}

export interface AppliedReturn {
  /** Files and links the cell changed, added or removed, as git saw them. */
  changed: number;
  warnings: string[];
}

/**
 * Brings a cell's changes into the worktree: the start commit's tree, minus what the cell's
 * listing no longer has, plus the files it sent, becomes a tree; the difference of the two
 * trees is applied by `git apply`, which refuses paths outside the tree or through links.
 */
export async function applyReturnedChanges(
  src: WorktreeSource,
  input: CellInputState,
  frame: ReturnedFrame,
  /** Directories relative to the worktree that are not the cell's to change here (installed dependencies): left as they are. */
  notReturned: string[] = [],
): Promise<AppliedReturn> {
  const outside = (p: string) => !notReturned.some((d) => p === d || p.startsWith(`${d}/`));
  const warnings: string[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'forge-swarm-return-'));
  // A root runner writes objects and files into a repository someone else may own: given back after.
  const restoreObjects = rememberObjectDirs(src.location.objectsDir);
  try {
    const target: GitTarget = { ...repoTarget(src), indexFile: join(scratch, 'index'), workTree: scratch };
    await runGit(target, ['read-tree', input.start]);
    const listed = new Set(frame.all);
    const omitted = new Set(frame.omitted.map((o) => o.path));
    const before = nulRecords((await runGit(target, ['ls-files', '-z'], { maxBytes: 256 * 1024 * 1024 })).text);
    // A file the cell kept but did not send back (too large) stays as it was here.
    const gone = before.filter((p) => !listed.has(p) && !omitted.has(p) && outside(p));
    if (gone.length > 0)
      await runGit(target, ['update-index', '--force-remove', '-z', '--stdin'], { input: gone.map((p) => `${p}\0`).join('') });
    const { entries, skipped } = readTar(frame.files);
    if (skipped.length > 0)
      warnings.push(
        `the cell sent back ${skipped.length} entries that are neither files nor links; left out: ${skipped.slice(0, 5).join(', ')}`,
      );
    const sent: { path: string; mode: string; content: Buffer }[] = [];
    for (const e of entries) {
      const path = e.name.replace(/^(\.\/)+/, '');
      if (e.type === 'dir' || !outside(path)) continue;
      if (!isSafeIndexPath(path)) {
        warnings.push(`the cell sent back a path git would not accept (${JSON.stringify(path).slice(0, 200)}); left out`);
        continue;
      }
      const content = e.type === 'symlink' ? Buffer.from(e.linkname ?? '') : (e.data ?? Buffer.alloc(0));
      sent.push({ path, mode: e.type === 'symlink' ? '120000' : (e.mode & 0o111) !== 0 ? '100755' : '100644', content });
    }
    const oids = await hashBlobs(
      target,
      scratch,
      sent.map((f) => f.content),
    );
    const lines = sent.map((f, i) => `${f.mode} ${oids[i]}\t${f.path}\0`);
    // A file that became a directory (or the other way round) must leave the index first.
    if (lines.length > 0) {
      const paths = new Set(sent.map((f) => f.path));
      const dirsOfSent = new Set(sent.flatMap((f) => ancestors(f.path)));
      const clash = before.filter((p) => dirsOfSent.has(p) || ancestors(p).some((a) => paths.has(a)));
      if (clash.length > 0)
        await runGit(target, ['update-index', '--force-remove', '-z', '--stdin'], { input: clash.map((p) => `${p}\0`).join('') });
      await runGit(target, ['update-index', '-z', '--index-info'], { input: lines.join('') });
    }
    const tree = (await runGit(target, ['write-tree'])).text.trim();
    const startTree = await treeOf(src, input.start);
    if (tree === startTree) return { changed: 0, warnings };
    const patch = await runGit(
      repoTarget(src),
      ['diff', '--binary', '--full-index', '--no-renames', '--no-ext-diff', '--no-textconv', startTree, tree],
      { maxBytes: MAX_APPLY_PATCH_BYTES },
    );
    if (patch.truncated) {
      warnings.push(`the cell's changes are over ${MAX_APPLY_PATCH_BYTES} bytes as a patch: not brought back`);
      return { changed: 0, warnings };
    }
    const stat = nulRecords((await runGit(repoTarget(src), ['diff', '--name-only', '-z', '--no-renames', startTree, tree])).text);
    const restoreOwners = rememberCheckoutOwners(src.location.top, stat);
    await withGitView(
      { objectsDir: src.location.objectsDir, head: input.start, workTree: src.location.top, objectFormat: src.location.objectFormat },
      async (view) => {
        await runGit(view, ['apply', '--binary', '--whitespace=nowarn', '-'], { input: patch.stdout });
      },
    ).finally(restoreOwners);
    return { changed: stat.length, warnings };
  } finally {
    restoreObjects();
    rmSync(scratch, { recursive: true, force: true });
  }
}
