import { closeSync, constants, type Dirent, fchownSync, fstatSync, openSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import {
  lstatAtOrNull,
  listDirectory,
  mkdirAt,
  openAt,
  openDirectoryAt,
  readlinkAt,
  readUpTo,
  replaceAt,
} from '../../hostguard/beneath.js';
import { ToolError } from './toolError.js';

const { O_RDONLY, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK, O_NOCTTY } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
const FILE_READ_FLAGS = O_RDONLY | O_NONBLOCK | O_NOCTTY;
const MAX_SYMLINKS = 40;
/** Entries a listing reads at most. */
const LIST_READ_MAX = 20_000;

/**
 * The attempt's worktree as the agent's file tools see it. Every path the model gives is
 * resolved the way openat2(RESOLVE_BENEATH) would: component by component from an open
 * descriptor of the root, each directory opened with O_NOFOLLOW from the one before, symbolic
 * links followed only while they stay inside, `.git` refused wherever it appears (requested
 * or reached through a link). Nothing can be swapped in between a check and the use, and a
 * write never goes through a link or a hard link: it replaces the entry (new file + rename).
 */
export class WorktreeFiles {
  readonly root: string;

  constructor(root: string) {
    this.root = realpathSync(root);
  }

  /** Reads at most `maxBytes` of a regular file (FIFOs, devices and directories are refused). */
  read(requested: unknown, maxBytes: number): { data: Buffer; size: number; truncated: boolean; rel: string } {
    return asToolError(requested, () => this.readUnchecked(requested, maxBytes));
  }

  private readUnchecked(requested: unknown, maxBytes: number): { data: Buffer; size: number; truncated: boolean; rel: string } {
    const r = this.resolve(requested, { followFinal: true, createDirs: false });
    try {
      if (r.name === '') throw new ToolError(`${display(requested)} is a directory`);
      const fd = openOrRefuse(() => openAt(r.dirFd, r.name, FILE_READ_FLAGS), requested);
      try {
        const st = fstatSync(fd);
        if (!st.isFile()) throw new ToolError(`${display(requested)} is not a regular file`);
        const data = readUpTo(fd, maxBytes + 1);
        return { data: data.subarray(0, maxBytes), size: st.size, truncated: data.length > maxBytes, rel: r.rel };
      } finally {
        closeSync(fd);
      }
    } finally {
      closeSync(r.dirFd);
    }
  }

  /** Replaces (or creates) a file with `content`, creating missing directories. */
  write(requested: unknown, content: Buffer): string {
    return asToolError(requested, () => this.writeUnchecked(requested, content));
  }

  private writeUnchecked(requested: unknown, content: Buffer): string {
    const r = this.resolve(requested, { followFinal: true, createDirs: true });
    try {
      if (r.name === '') throw new ToolError(`${display(requested)} is a directory`);
      const existing = lstatAtOrNull(r.dirFd, r.name);
      if (existing?.isDirectory()) throw new ToolError(`${display(requested)} is a directory`);
      // Keep an existing file's permission bits, never its setuid/setgid bits.
      const mode = existing?.isFile() ? existing.mode & 0o777 : 0o644;
      replaceAt(r.dirFd, r.name, content, mode, (fd) => this.giveToOwner(fd, r.dirFd));
      return r.rel;
    } finally {
      closeSync(r.dirFd);
    }
  }

  /** Entries of a directory (types as stored, links not followed). */
  list(requested: unknown): { entries: Dirent<Buffer>[]; rel: string; cut: boolean } {
    return asToolError(requested, () => this.listUnchecked(requested));
  }

  private listUnchecked(requested: unknown): { entries: Dirent<Buffer>[]; rel: string; cut: boolean } {
    const dir = this.openDirectory(requested);
    try {
      // Bounded: a directory of millions of names is not read whole for a listing of 500.
      const { entries, cut } = listDirectory(dir.fd, LIST_READ_MAX);
      return { entries, rel: dir.rel, cut };
    } finally {
      closeSync(dir.fd);
    }
  }

  /** Opens a directory beneath the root; the caller closes the descriptor. */
  openDirectory(requested: unknown): { fd: number; rel: string } {
    return asToolError(requested, () => this.openDirectoryUnchecked(requested));
  }

  private openDirectoryUnchecked(requested: unknown): { fd: number; rel: string } {
    const r = this.resolve(requested, { followFinal: true, createDirs: false });
    if (r.name === '') return { fd: r.dirFd, rel: r.rel };
    try {
      const st = lstatAtOrNull(r.dirFd, r.name);
      if (!st?.isDirectory()) throw new ToolError(`${display(requested)} is not a directory`);
      return { fd: openOrRefuse(() => openDirectoryAt(r.dirFd, r.name, O_RDONLY), requested), rel: r.rel };
    } finally {
      closeSync(r.dirFd);
    }
  }

  /**
   * Resolves `requested` to an open real parent directory and the final name in it ('' when
   * the path is the root). The caller closes dirFd.
   */
  resolve(requested: unknown, opts: { followFinal: boolean; createDirs: boolean }): { dirFd: number; name: string; rel: string } {
    const queue = this.components(requested);
    const stack: { fd: number; name: string }[] = [{ fd: openSync(this.root, DIR_FLAGS), name: '' }];
    const top = () => stack[stack.length - 1]!;
    const closeAllBut = (keep: number) => {
      for (const s of stack) if (s.fd !== keep) closeSync(s.fd);
    };
    let links = 0;
    try {
      while (queue.length > 0) {
        const c = queue.shift()!;
        if (c === '..') {
          if (stack.length === 1)
            throw new ToolError(`path ${display(requested)} is outside the repository; use a path relative to its root`);
          closeSync(stack.pop()!.fd);
          continue;
        }
        if (c === '.git') throw new ToolError(`path ${display(requested)} is git metadata; the repository's history is not editable`);
        const last = queue.length === 0;
        const st = lstatAtOrNull(top().fd, c);
        if (st?.isSymbolicLink() && (!last || opts.followFinal)) {
          if (++links > MAX_SYMLINKS) throw new ToolError(`path ${display(requested)} has too many levels of symbolic links`);
          queue.unshift(
            ...this.linkComponents(requested, readlinkAt(top().fd, c), () => {
              // An absolute target inside the worktree restarts from the root.
              while (stack.length > 1) closeSync(stack.pop()!.fd);
            }),
          );
          continue;
        }
        if (last && !st?.isDirectory()) return this.finish(stack, c, closeAllBut);
        if (!st) {
          if (!opts.createDirs) throw new ToolError(`${display(requested)} does not exist`);
          mkdirAt(top().fd, c, 0o755);
          const fd = openOrRefuse(() => openDirectoryAt(top().fd, c, O_RDONLY), requested);
          this.giveToOwner(fd, top().fd);
          stack.push({ fd, name: c });
          continue;
        }
        if (!st.isDirectory())
          throw new ToolError(`${display(requested)}: ${[...stack.slice(1).map((s) => s.name), c].join('/')} is not a directory`);
        if (last) return this.finish(stack, c, closeAllBut);
        stack.push({ fd: openOrRefuse(() => openDirectoryAt(top().fd, c, O_RDONLY), requested), name: c });
      }
      // The path named the root or a directory reached by `..`: return that directory itself.
      const dir = top();
      closeAllBut(dir.fd);
      return {
        dirFd: dir.fd,
        name: '',
        rel:
          stack
            .slice(1)
            .map((s) => s.name)
            .join('/') || '.',
      };
    } catch (e) {
      closeAllBut(-1);
      throw e;
    }
  }

  private finish(stack: { fd: number; name: string }[], name: string, closeAllBut: (keep: number) => void) {
    const parent = stack[stack.length - 1]!;
    closeAllBut(parent.fd);
    return { dirFd: parent.fd, name, rel: [...stack.slice(1).map((s) => s.name), name].join('/') };
  }

  private components(requested: unknown): string[] {
    if (typeof requested !== 'string' || requested.trim() === '')
      throw new ToolError('path must be a non-empty string relative to the repository root');
    if (requested.includes('\0')) throw new ToolError('path must not contain NUL bytes');
    let rel = requested;
    if (isAbsolute(requested)) {
      rel = relative(this.root, requested);
      if (rel.startsWith('..') || isAbsolute(rel))
        throw new ToolError(`path ${requested} is outside the repository; use a path relative to its root`);
    }
    return rel.split(sep).filter((c) => c !== '' && c !== '.');
  }

  private linkComponents(requested: unknown, target: string, restartAtRoot: () => void): string[] {
    if (!isAbsolute(target)) return target.split('/').filter((c) => c !== '' && c !== '.');
    const rel = relative(this.root, target);
    if (rel.startsWith('..') || isAbsolute(rel))
      throw new ToolError(`path ${display(requested)} leads outside the repository through a symbolic link`);
    restartAtRoot();
    return rel.split(sep).filter((c) => c !== '' && c !== '.');
  }

  /** A root runner's new files belong to whoever owns the worktree (the cell user), like the rest. */
  private giveToOwner(fd: number, parentFd: number): void {
    if ((process.getuid?.() ?? 0) !== 0) return;
    const owner = fstatSync(parentFd);
    if (owner.uid !== 0) fchownSync(fd, owner.uid, owner.gid);
  }
}

function openOrRefuse(open: () => number, requested: unknown): number {
  try {
    return open();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new ToolError(`${display(requested)} changed into a symbolic link while it was opened; try again`);
    if (code === 'ENOENT') throw new ToolError(`${display(requested)} does not exist`);
    if (code === 'ENOTDIR') throw new ToolError(`${display(requested)} is not a directory`);
    if (code === 'EACCES') throw new ToolError(`${display(requested)} is not readable`);
    throw e;
  }
}

/** A path as the model wrote it, for its error messages: control characters shown as \xNN. */
function display(requested: unknown): string {
  const text = typeof requested === 'string' ? requested : String(requested);
  // eslint-disable-next-line no-control-regex
  return text.slice(0, 300).replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * Any other failure of a file tool (a name too long, no space, a read-only directory) is the
 * model's to see and handle: a ToolError, never an error that ends the attempt.
 */
function asToolError<T>(requested: unknown, work: () => T): T {
  try {
    return work();
  } catch (e) {
    if (e instanceof ToolError) throw e;
    const err = e as NodeJS.ErrnoException;
    const why: Record<string, string> = {
      ENAMETOOLONG: 'the name is too long',
      ENOSPC: 'no space left',
      EROFS: 'read-only',
      EACCES: 'permission denied',
      EPERM: 'not permitted',
      ENOTDIR: 'a part of it is not a directory',
      EISDIR: 'it is a directory',
      EEXIST: 'it exists',
    };
    throw new ToolError(`${display(requested)}: ${why[err.code ?? ''] ?? err.code ?? 'failed'}`);
  }
}
