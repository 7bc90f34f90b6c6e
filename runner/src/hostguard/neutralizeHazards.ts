import { closeSync, constants, type Dir, type Dirent, fstatSync, openSync } from 'node:fs';
import type { CellResult } from '../protocol/cellResult.js';
import { displayText } from './displayText.js';
import { chmodDescriptor, lstatAt, O_PATH, openAt, openDirectoryAt, openDirectoryStream, reopen, unlinkAt } from './beneath.js';

export type NeutralizedEntry = CellResult['neutralized'][number];

/** Why a walk stopped before the end: past its entry cap or deadline, or a directory it could not read. */
export type ScanStop = { kind: 'entries'; limit: number } | { kind: 'deadline'; seconds: number } | { kind: 'unreadable'; path: string };

export interface HazardScan {
  neutralized: NeutralizedEntry[];
  /** Why the walk stopped before the end, or null: then entries beyond it may still be hazards. */
  incomplete: ScanStop | null;
  /** Entries whose path is longer than host tools (git) can name: they are in no diff. */
  tooLong: number;
}

export const HAZARD_SCAN_LIMITS = { maxEntries: 1_000_000, deadlineMs: 60_000, reported: 500 } as const;

export interface HazardScanLimits {
  maxEntries: number;
  deadlineMs: number;
  reported: number;
}

/** PATH_MAX: a path at least this long cannot be opened by name, so git never sees it. */
export const HOST_PATH_MAX = 4096;

/** Entries read from the kernel per batch: a directory of millions of names is never held in memory at once. */
const DIR_BATCH = 256;

const { O_RDONLY, O_DIRECTORY } = constants;

/** Pure: the one line saying why a walk that stopped early could not vouch for the tree. */
export function describeScanStop(stop: ScanStop): string {
  switch (stop.kind) {
    case 'entries':
      return `the cell left more than ${stop.limit} entries in the worktree`;
    case 'deadline':
      return `the worktree took the hazard scan past its ${stop.seconds} s deadline`;
    case 'unreadable':
      return `${stop.path} in the worktree cannot be read or changed by the runner`;
  }
}

type Kind = 'dir' | 'file' | 'fifo' | 'socket' | 'device' | 'other';

type Typed = Pick<Dirent, 'isDirectory' | 'isFile' | 'isSymbolicLink' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice'>;

function kindOf(e: Typed): Kind | null {
  if (e.isDirectory()) return 'dir';
  if (e.isFile()) return 'file';
  if (e.isSymbolicLink()) return 'other';
  if (e.isFIFO()) return 'fifo';
  if (e.isSocket()) return 'socket';
  if (e.isCharacterDevice() || e.isBlockDevice()) return 'device';
  return null;
}

/**
 * After a cell, before anything else on the host reads the tree: clears setuid/setgid bits
 * and removes device nodes, FIFOs and sockets the cell left. None of them can be represented
 * in git, and on the host each is a hazard (a setuid binary another user runs, a FIFO that
 * blocks a reader, a device node). The walk goes from directory descriptor to directory
 * descriptor (O_NOFOLLOW), so links are never followed and a tree deeper than PATH_MAX is
 * walked whole; paths that long are counted, since git cannot see them. A walk that stops
 * early says why in `incomplete`: the caller must then not give the tree back as checked.
 */
export function neutralizeHazards(
  top: string,
  opts: {
    skip?: string[];
    limits?: HazardScanLimits;
    /** Length of the tree's real path when `top` is a /proc/self/fd name. */ topBytes?: number;
  } = {},
): HazardScan {
  const limits = opts.limits ?? HAZARD_SCAN_LIMITS;
  const deadline = Date.now() + limits.deadlineMs;
  const skipped = new Set(opts.skip ?? []);
  const neutralized: NeutralizedEntry[] = [];
  const uid = process.geteuid?.() ?? 0;
  let seen = 0;
  let tooLong = 0;
  let incomplete: ScanStop | null = null;
  const record = (entry: NeutralizedEntry) => {
    if (neutralized.length < limits.reported) neutralized.push(entry);
  };
  // Depth first, one open directory per level (never one per pending directory), read in
  // batches. Names as bytes: a name that is not UTF-8 would otherwise be looked up under another name.
  const frames: { fd: number; dir: Dir; rel: string; bytes: number }[] = [];
  const enter = (fd: number, rel: string, bytes: number): boolean => {
    try {
      // The descriptor's own name: the directory that was opened, whatever happened to its path.
      const dir = openDirectoryStream(fd, { bufferSize: DIR_BATCH, raw: true });
      frames.push({ fd, dir, rel, bytes });
      return true;
    } catch {
      closeSync(fd);
      return false;
    }
  };
  // The top is the caller's (a pinned descriptor's /proc name, which must be followed).
  const topFd = openDirectory(() => openSync(top, O_PATH | O_DIRECTORY), uid);
  if (topFd === null || !enter(topFd, '', opts.topBytes ?? Buffer.byteLength(top)))
    return { neutralized, incomplete: { kind: 'unreadable', path: '.' }, tooLong };
  try {
    while (frames.length > 0) {
      const dir = frames[frames.length - 1]!;
      const e = dir.dir.readSync() as Dirent<Buffer> | null;
      if (!e) {
        dir.dir.closeSync();
        closeSync(dir.fd);
        frames.pop();
        continue;
      }
      if (++seen > limits.maxEntries) {
        incomplete = { kind: 'entries', limit: limits.maxEntries };
        break;
      }
      if (seen % 1024 === 0 && Date.now() > deadline) {
        incomplete = { kind: 'deadline', seconds: limits.deadlineMs / 1000 };
        break;
      }
      if (dir.rel === '' && skipped.has(displayText(e.name))) continue;
      // Named only when it is reported or entered: most entries never are.
      const rel = () => (dir.rel === '' ? displayText(e.name) : `${dir.rel}/${displayText(e.name)}`);
      const bytes = dir.bytes + 1 + e.name.length;
      if (bytes >= HOST_PATH_MAX) tooLong++;
      // A file system that does not say an entry's type in the listing: ask the entry itself.
      let kind = kindOf(e);
      let done = true;
      if (kind === null) {
        try {
          kind = kindOf(lstatAt(dir.fd, e.name)) ?? 'other';
        } catch (err) {
          done = (err as NodeJS.ErrnoException).code === 'ENOENT';
        }
      }
      if (kind === 'dir') {
        const fd = openDirectory(() => openDirectoryAt(dir.fd, e.name), uid);
        done = fd !== null && enter(fd, rel(), bytes);
      } else if (kind === 'fifo' || kind === 'socket' || kind === 'device') {
        done = tryRemoving(dir.fd, e.name);
        if (done) record({ path: rel(), found: kind, action: 'removed' });
      } else if (kind === 'file') done = clearSetId(dir.fd, e.name, rel, record);
      if (!done) {
        incomplete = { kind: 'unreadable', path: rel().slice(0, 200) };
        break;
      }
    }
  } finally {
    for (const f of frames) {
      f.dir.closeSync();
      closeSync(f.fd);
    }
  }
  return { neutralized, incomplete, tooLong };
}

/**
 * A directory of the tree, opened without following a link; null when it cannot be. A runner
 * that is not root runs cells as itself, so a cell can leave a directory it owns without read,
 * search or write for its owner (others may still search it): the runner gives itself those
 * back (nothing runs in the tree any more), so nothing below it escapes the walk.
 */
function openDirectory(open: () => number, uid: number): number | null {
  let handle: number;
  try {
    handle = open();
  } catch {
    return null;
  }
  try {
    if (uid !== 0) {
      const st = fstatSync(handle);
      if (st.uid === uid && (st.mode & 0o700) !== 0o700) chmodDescriptor(handle, (st.mode & 0o7777) | 0o700);
    }
    return reopen(handle, O_RDONLY | O_DIRECTORY);
  } catch {
    return null;
  } finally {
    closeSync(handle);
  }
}

/** Unlinks a special file; false when it is still there. */
function tryRemoving(dirFd: number, name: Buffer): boolean {
  try {
    unlinkAt(dirFd, name);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/**
 * Most files carry no setuid/setgid bit: one lstat through the directory tells, and only a
 * file that has one is opened (O_PATH, never followed) and changed through its descriptor.
 */
function clearSetId(dirFd: number, name: Buffer, rel: () => string, record: (e: NeutralizedEntry) => void): boolean {
  let fd: number;
  try {
    const st = lstatAt(dirFd, name);
    if (!st.isFile() || (st.mode & 0o6000) === 0) return true;
    fd = openAt(dirFd, name, O_PATH);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
  try {
    const now = fstatSync(fd);
    if (!now.isFile() || (now.mode & 0o6000) === 0) return true;
    // fchmod refuses O_PATH descriptors; the descriptor's own name reaches the same inode.
    chmodDescriptor(fd, now.mode & 0o1777);
    record({ path: rel(), found: 'setid', action: 'cleared' });
    return true;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}
