import { closeSync, constants, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { WorktreeDiff } from '../protocol/cellResult.js';
import { CELL_REPORTS_RULE, includedFileRules, translateIgnoreRules } from './baseIgnoreRules.js';
import { INCLUDED_FILES_NAME } from './copyIncludedFiles.js';
import { lstatBeneathPath, openBeneathPath } from '../hostguard/beneath.js';
import { readRegularPath } from '../hostguard/readRegularFile.js';
import { displayText, isUtf8Text } from '../hostguard/displayText.js';
import type { PatchBytes } from './patchBytes.js';
import { generatedCaches } from './generatedCaches.js';
import { reviewWarnings } from './reviewWarnings.js';
import type { RepoLocation } from './repoLocation.js';
import { GitDeadlineError, type GitView, nulRecordBytes, nulRecords, runGit, withGitView } from './safeGit.js';

/**
 * Diff capture runs on the host after every cell, on a tree the cell wrote: it is bounded in
 * time (a deadline), in work (untracked files listed, bytes hashed) and in what it returns
 * (patch bytes, listed files). When a bound cuts it short the result says so.
 */
export interface DiffCaps {
  /** Most bytes of review patch text returned. */
  patchBytes: number;
  /** Untracked files larger than this are named in `omitted`, not diffed. */
  untrackedFileBytes: number;
  /** Changed tracked files larger than this are named in `omitted`, not hashed or diffed. */
  changedFileBytes: number;
  /** Files larger than this are diffed as binary (named, not dumped) in the review patch. */
  textFileBytes: number;
  /** Most bytes of changed content hashed in one capture; files past it are omitted. */
  hashBytes: number;
  /** Most untracked files looked at; past it the capture is marked incomplete. */
  maxUntracked: number;
  /** Most file entries listed in `files`. */
  maxFiles: number;
  /** Wall-clock budget of one capture. */
  deadlineMs: number;
}

export const DEFAULT_DIFF_CAPS: DiffCaps = {
  patchBytes: 1024 * 1024,
  untrackedFileBytes: 8 * 1024 * 1024,
  changedFileBytes: 64 * 1024 * 1024,
  textFileBytes: 1024 * 1024,
  hashBytes: 512 * 1024 * 1024,
  maxUntracked: 20_000,
  maxFiles: 2000,
  deadlineMs: 60_000,
};

/** Largest patch captured for applying elsewhere. */
export const MAX_APPLY_PATCH_BYTES = 64 * 1024 * 1024;

/** What a capture needs: where the tree's git data is (resolved before any cell ran) and the base. */
export interface WorktreeSource {
  location: Pick<RepoLocation, 'top' | 'objectsDir' | 'indexFile' | 'objectFormat' | 'commonDir'> & Partial<Pick<RepoLocation, 'gitDir'>>;
  /** The commit the tree is compared with. */
  base: string;
}

/** Why a changed file whose name is not UTF-8 is left out of the change set. */
const NOT_UTF8_NAME = 'its name is not valid UTF-8: it cannot be reviewed by name, so it is neither shown nor applied';

const STATUS: Record<string, WorktreeDiff['files'][number]['status']> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  C: 'added',
  T: 'type-changed',
};

/** Options every diff of the tree shares: literal, no external programs, no submodules. */
const DIFF_OPTIONS = ['--no-color', '--no-ext-diff', '--no-textconv', '--ignore-submodules=all'];

interface PreparedChanges {
  view: GitView;
  base: string;
  deadline: number;
  omitted: WorktreeDiff['omitted'];
  incomplete: string | null;
  /** Untracked directories that mark themselves as caches (generatedCaches.ts): not part of the change. */
  generated: string[];
}

/** Review diff of a tree against its base: tracked and untracked files, bounded. */
export async function captureWorktreeDiff(src: WorktreeSource, caps: DiffCaps = DEFAULT_DIFF_CAPS): Promise<WorktreeDiff> {
  try {
    return await withPreparedChanges(src, caps, async (c) => {
      const opts = { deadline: c.deadline, lowPriority: true };
      // No core.bigFileThreshold: a large text file is shown as text (the patch is capped),
      // never named as binary while its content is applied unseen.
      const meta = await runGit(c.view, ['diff', ...DIFF_OPTIONS, '-M', '--raw', '--numstat', '-z', c.base, '--'], {
        ...opts,
        maxBytes: 32 * 1024 * 1024,
      });
      const patch = await runGit(c.view, ['diff', ...DIFF_OPTIONS, '-M', c.base, '--'], { ...opts, maxBytes: caps.patchBytes });
      const detailed = parseRawNumstatWithModes(meta.text);
      const all = detailed.map(({ mode: _mode, ...f }) => f);
      const files = all.slice(0, caps.maxFiles);
      let incomplete = c.incomplete;
      if (meta.truncated) incomplete ??= 'the list of changed files is larger than 32 MiB';
      return {
        patch: displayText(patch.stdout),
        truncated: patch.truncated,
        bytes: patch.bytes,
        files,
        files_total: all.length,
        omitted: c.omitted,
        ...(c.generated.length > 0 ? { generated: c.generated } : {}),
        warnings: reviewWarnings(detailed, startsWithShebang(src.location.top)),
        incomplete,
      };
    });
  } catch (e) {
    return failedCapture(e);
  }
}

/**
 * The full-fidelity patch of a tree against its base (binary contents included, untracked
 * files included) for applying to another tree, with what it leaves out.
 */
export async function captureApplicablePatch(
  src: WorktreeSource,
  caps: DiffCaps = DEFAULT_DIFF_CAPS,
): Promise<{
  patch: PatchBytes;
  /** The paths the patch changes, exactly (from git's NUL-separated listing, not its headers). */
  paths: string[];
  omitted: WorktreeDiff['omitted'];
  /** Directories a tool marked as its cache: generated, not part of the patch. */
  generated: string[];
  warnings: string[];
  incomplete: string | null;
}> {
  return withPreparedChanges(src, caps, async (c) => {
    const opts = { deadline: c.deadline, lowPriority: true };
    const patch = await runGit(c.view, ['diff', ...DIFF_OPTIONS, '--binary', '--full-index', '-M', c.base, '--'], {
      ...opts,
      maxBytes: MAX_APPLY_PATCH_BYTES,
    });
    const meta = await runGit(c.view, ['diff', ...DIFF_OPTIONS, '-M', '--raw', '--numstat', '-z', c.base, '--'], {
      ...opts,
      maxBytes: 32 * 1024 * 1024,
    });
    const incomplete = patch.truncated ? `the patch is larger than ${MAX_APPLY_PATCH_BYTES} bytes` : c.incomplete;
    const files = parseRawNumstatWithModes(meta.text);
    return {
      patch: patch.stdout,
      paths: files.map((f) => f.path),
      omitted: c.omitted,
      generated: c.generated,
      warnings: reviewWarnings(files, startsWithShebang(src.location.top)),
      incomplete,
    };
  });
}

/**
 * Records the tree's change set (exactly what captureApplicablePatch would carry) as one
 * commit on top of the base, written to the repository's objects. The work tree and the
 * repository's refs are not touched; the caller points a branch at the commit.
 */
export async function commitWorktreeChanges(
  src: WorktreeSource,
  message: string,
  caps: DiffCaps = DEFAULT_DIFF_CAPS,
): Promise<{ commit: string; incomplete: string | null }> {
  return withPreparedChanges(src, caps, async (c) => {
    const opts = { deadline: c.deadline, lowPriority: true };
    const changed = nulRecordBytes(
      (await runGit(c.view, ['diff', ...DIFF_OPTIONS, '--no-renames', '--name-only', '-z', c.base, '--'], opts)).stdout,
    );
    if (changed.length > 0)
      await runGit(c.view, ['update-index', '--add', '--remove', '-z', '--stdin'], { ...opts, input: nulJoin(changed) });
    const tree = (await runGit(c.view, ['write-tree'], opts)).text.trim();
    const identity = {
      GIT_AUTHOR_NAME: 'Forge',
      GIT_AUTHOR_EMAIL: 'forge@localhost',
      GIT_COMMITTER_NAME: 'Forge',
      GIT_COMMITTER_EMAIL: 'forge@localhost',
    };
    const commit = (await runGit(c.view, ['commit-tree', tree, '-p', c.base], { ...opts, input: message, env: identity })).text.trim();
    return { commit, incomplete: c.incomplete };
  });
}

/**
 * Sets up a runner-owned view of the tree whose scratch index holds the base plus every
 * change that fits the caps: stat-dirty tracked files (too-large ones marked unchanged and
 * named) and untracked files not ignored by the base's rules (as intent-to-add entries).
 */
async function withPreparedChanges<T>(src: WorktreeSource, caps: DiffCaps, work: (c: PreparedChanges) => Promise<T>): Promise<T> {
  const deadline = Date.now() + caps.deadlineMs;
  const { top } = src.location;
  const exclude = await baseIgnoreRulesFor(src, deadline);
  return withGitView(
    {
      objectsDir: src.location.objectsDir,
      head: src.base,
      workTree: top,
      indexFrom: src.location.indexFile,
      objectFormat: src.location.objectFormat,
      exclude,
    },
    async (view) => {
      const opts = { deadline, lowPriority: true };
      const omitted: WorktreeDiff['omitted'] = [];
      let incomplete: string | null = null;
      let hashed = 0;
      const budget = (path: string, size: number, limit: number, what: string): boolean => {
        if (size > limit) {
          omitted.push({ path, reason: `${what} larger than ${limit} bytes (${size})` });
          return false;
        }
        if (hashed + size > caps.hashBytes) {
          omitted.push({ path, reason: `past the ${caps.hashBytes}-byte budget of content hashed per capture` });
          incomplete ??= `more than ${caps.hashBytes} bytes of changed content`;
          return false;
        }
        hashed += size;
        return true;
      };

      // Tracked files whose stat changed (no content is read for this). Names are bytes: a
      // file name need not be UTF-8, and a decoded one would name another file.
      const dirty = nulRecordBytes(
        (await runGit(view, ['diff-files', '--name-only', '-z'], { ...opts, maxBytes: 64 * 1024 * 1024 })).stdout,
      );
      const skip: Buffer[] = [];
      const nowDirectories: Buffer[] = [];
      for (const path of dirty) {
        const st = lstatBeneathPath(top, path);
        if (!isUtf8Text(path)) {
          // A name JSON, the review and the extension cannot carry exactly is not carried at all.
          omitted.push({ path: displayText(path), reason: NOT_UTF8_NAME });
          skip.push(path);
          continue;
        }
        if (st?.isFile() && !budget(displayText(path), st.size, caps.changedFileBytes, 'changed file')) skip.push(path);
        // A file that became a directory is gone: what is inside is untracked like any new
        // file (git would otherwise show a nested repository there as a gitlink, which the
        // commit would not carry).
        if (st?.isDirectory()) nowDirectories.push(path);
      }
      if (skip.length > 0) await runGit(view, ['update-index', '--assume-unchanged', '-z', '--stdin'], { ...opts, input: nulJoin(skip) });
      if (nowDirectories.length > 0)
        await runGit(view, ['update-index', '--force-remove', '-z', '--stdin'], { ...opts, input: nulJoin(nowDirectories) });

      // Untracked files, listed with the base's ignore rules only.
      const listing = await runGit(view, ['ls-files', '-z', '--others', `--exclude-from=${view.excludeFile}`], {
        ...opts,
        maxRecords: caps.maxUntracked + 1,
        maxBytes: 256 * 1024 * 1024,
      });
      let untracked = nulRecordBytes(listing.stdout);
      if (listing.truncated) {
        untracked = untracked.slice(0, caps.maxUntracked);
        incomplete ??= `more than ${caps.maxUntracked} untracked files; only the first ${caps.maxUntracked} were looked at`;
      }
      // Caches a tool marked as its own (pytest's, ruff's...): named, not part of the change.
      const generated = await generatedCaches(
        top,
        untracked.filter(isUtf8Text).map((p) => p.toString('utf8')),
        async (dir) =>
          (await runGit(view, ['ls-tree', '-r', '--name-only', '-z', src.base, '--', dir], { ...opts, maxRecords: 1 })).stdout.length > 0,
      );
      if (generated.length > 0) untracked = untracked.filter((p) => !generated.some((d) => p.toString('utf8').startsWith(d)));
      const include: Buffer[] = [];
      for (const path of untracked) {
        const shown = displayText(path);
        // A directory entry is a nested repository: its content is not this tree's.
        if (path[path.length - 1] === 0x2f) {
          omitted.push({ path: shown, reason: 'nested git repository' });
          continue;
        }
        if (!isUtf8Text(path)) {
          omitted.push({ path: shown, reason: NOT_UTF8_NAME });
          continue;
        }
        const st = lstatBeneathPath(top, path);
        if (!st) omitted.push({ path: shown, reason: 'vanished while diffing' });
        else if (st.isSymbolicLink()) include.push(path);
        else if (!st.isFile()) omitted.push({ path: shown, reason: 'not a regular file' });
        else if (budget(shown, st.size, caps.untrackedFileBytes, 'untracked file')) include.push(path);
      }
      if (include.length > 0) {
        await runGit(view, ['add', '--intent-to-add', '--force', '--pathspec-from-file=-', '--pathspec-file-nul'], {
          ...opts,
          input: nulJoin(include),
        });
      }
      // Records the stat of unchanged files once, so the diffs below hash only real changes.
      await runGit(view, ['update-index', '-q', '--refresh'], { ...opts, okExitCodes: [1] });
      return work({ view, base: src.base, deadline, omitted, incomplete, generated });
    },
  );
}

function failedCapture(e: unknown): WorktreeDiff {
  return emptyDiff(
    e instanceof GitDeadlineError ? 'diff capture stopped at its deadline' : `diff capture failed: ${(e as Error).message.split('\n')[0]}`,
  );
}

/** A diff that shows nothing, saying why. */
export function emptyDiff(incomplete: string): WorktreeDiff {
  return { patch: '', truncated: false, bytes: 0, files: [], files_total: 0, omitted: [], warnings: [], incomplete };
}

/** Whether a file of the tree starts with "#!" (read without following links). */
function startsWithShebang(top: string): (path: string) => boolean {
  return (path) => {
    let fd: number | null = null;
    try {
      fd = openBeneathPath(top, path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
      const head = Buffer.alloc(2);
      return readSync(fd, head, 0, 2, 0) === 2 && head.toString('latin1') === '#!';
    } catch {
      return false;
    } finally {
      if (fd !== null) closeSync(fd);
    }
  };
}

function nulJoin(paths: Buffer[]): Buffer {
  return Buffer.concat(paths.flatMap((p) => [p, Buffer.from([0])]));
}

const ignoreRulesCache = new Map<string, string>();

/** The base commit's .gitignore files and the repository's info/exclude, as one exclude file. */
async function baseIgnoreRulesFor(src: WorktreeSource, deadline: number): Promise<string> {
  const key = `${src.location.objectsDir}\0${src.base}\0${src.location.gitDir ?? ''}`;
  const cached = ignoreRulesCache.get(key);
  if (cached !== undefined) return cached;
  const target = { gitDir: src.location.commonDir, objectsDir: src.location.objectsDir };
  const tree = nulRecords((await runGit(target, ['ls-tree', '-r', '-z', '--full-tree', src.base], { deadline })).text);
  const blobs: { dir: string; sha: string }[] = [];
  for (const entry of tree) {
    const m = /^\d+ blob (\S+)\t(.*)$/s.exec(entry);
    if (!m) continue;
    const path = m[2]!;
    if (path === '.gitignore' || path.endsWith('/.gitignore'))
      blobs.push({ dir: path.slice(0, -'.gitignore'.length).replace(/\/$/, ''), sha: m[1]! });
  }
  const contents =
    blobs.length === 0
      ? []
      : parseCatFileBatch(
          (
            await runGit(target, ['cat-file', '--batch'], {
              deadline,
              input: blobs.map((b) => b.sha).join('\n') + '\n',
              maxBytes: 64 * 1024 * 1024,
            })
          ).stdout,
        );
  const files = blobs.map((b, i) => ({ dir: b.dir, text: (contents[i] ?? '').slice(0, 1024 * 1024) }));
  let infoExclude = '';
  try {
    infoExclude = readFileSync(join(src.location.commonDir, 'info', 'exclude'), 'utf8').slice(0, 1024 * 1024);
  } catch {
    infoExclude = '';
  }
  // The files the runner copied into this worktree (INCLUDED_FILES_NAME in its own git dir).
  let included = '';
  if (src.location.gitDir) {
    const listed = readRegularPath(join(src.location.gitDir, INCLUDED_FILES_NAME), 4 * 1024 * 1024);
    if (Buffer.isBuffer(listed)) included = includedFileRules(nulRecords(listed.toString('utf8')));
  }
  const rules = translateIgnoreRules(files, infoExclude) + included + CELL_REPORTS_RULE;
  if (ignoreRulesCache.size > 64) ignoreRulesCache.delete(ignoreRulesCache.keys().next().value!);
  ignoreRulesCache.set(key, rules);
  return rules;
}

/** Pure: `git cat-file --batch` output -> the contents, in request order. */
export function parseCatFileBatch(out: Buffer): string[] {
  const contents: string[] = [];
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(0x0a, at);
    if (nl === -1) break;
    const header = out.subarray(at, nl).toString('utf8');
    const m = /^\S+ \S+ (\d+)$/.exec(header);
    if (!m) {
      contents.push(''); // "<sha> missing"
      at = nl + 1;
      continue;
    }
    const size = Number(m[1]);
    contents.push(out.subarray(nl + 1, nl + 1 + size).toString('utf8'));
    at = nl + 1 + size + 1;
  }
  return contents;
}

/** Pure: `git diff --raw --numstat -z` output -> file entries (renames name the new path). */
export function parseRawNumstat(text: string): WorktreeDiff['files'] {
  return parseRawNumstatWithModes(text).map(({ mode: _mode, ...f }) => f);
}

/** Pure: as parseRawNumstat, with each file's new mode (e.g. 100755 for an executable). */
export function parseRawNumstatWithModes(text: string): (WorktreeDiff['files'][number] & { mode: string })[] {
  const parts = text.split('\0');
  const files: (WorktreeDiff['files'][number] & { mode: string })[] = [];
  const binary = new Set<string>();
  for (let i = 0; i < parts.length;) {
    const head = parts[i++] ?? '';
    if (head === '') continue;
    if (head.startsWith(':')) {
      const fields = head.split(' ');
      const letter = fields[4]?.[0] ?? 'M';
      if (letter === 'R' || letter === 'C') i++; // old path
      const path = parts[i++];
      if (path !== undefined) files.push({ path, status: STATUS[letter] ?? 'modified', binary: false, mode: fields[1] ?? '' });
      continue;
    }
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(head);
    if (!m) continue;
    let path = m[3] ?? '';
    if (path === '') {
      i++; // rename: old path, then new path
      path = parts[i++] ?? '';
    }
    if (m[1] === '-' && m[2] === '-') binary.add(path);
  }
  return files.map((f) => ({ ...f, binary: binary.has(f.path) }));
}
