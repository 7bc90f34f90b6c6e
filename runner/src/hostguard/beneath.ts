import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  type Dir,
  type Dirent,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  opendirSync,
  readlinkSync,
  readSync,
  renameSync,
  type Stats,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';

/**
 * The one primitive every host-side walk of a tree a cell or a repository could write is built
 * on: each step starts from an open directory descriptor and names one component in it, with
 * O_NOFOLLOW, so no link is followed and nothing can be swapped in between a check and a use
 * (what openat(2) and openat2(RESOLVE_BENEATH) give in C; Node has no *at calls, so the
 * descriptor is named through /proc/self/fd, here and nowhere else).
 */

/** Linux open(2) flag (not in Node's fs.constants): a descriptor that only names a file. */
export const O_PATH = 0o10000000;

/** A directory entry's name: a string, or the raw bytes of a name that is not UTF-8. */
export type EntryName = string | Buffer;

/** The path that names an open descriptor itself, for calls that take a path (chmod, opendir, mount sources). */
export function descriptorPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

/** The path of the entry `name` in the open directory `dirFd`. `name` is one component, never `..`. */
export function entryPath(dirFd: number, name: string): string;
export function entryPath(dirFd: number, name: Buffer): Buffer;
export function entryPath(dirFd: number, name: EntryName): string | Buffer;
export function entryPath(dirFd: number, name: EntryName): string | Buffer {
  oneComponent(name);
  return typeof name === 'string' ? `/proc/self/fd/${dirFd}/${name}` : Buffer.concat([Buffer.from(`/proc/self/fd/${dirFd}/`), name]);
}

function oneComponent(name: EntryName): void {
  const s = typeof name === 'string' ? name : name.toString('latin1');
  if (s === '' || s === '.' || s === '..' || s.includes('/') || s.includes('\0'))
    throw new Error(`internal: ${JSON.stringify(s)} is not one name in a directory`);
}

/** Opens `name` in `dirFd`, never following a link there (O_NOFOLLOW is always added). */
export function openAt(dirFd: number, name: EntryName, flags: number, mode?: number): number {
  return openSync(entryPath(dirFd, name), flags | constants.O_NOFOLLOW, mode);
}

/** Opens the directory `name` in `dirFd` (O_PATH: for walking and identity, not reading). */
export function openDirectoryAt(dirFd: number, name: EntryName, flags: number = O_PATH): number {
  return openAt(dirFd, name, flags | constants.O_DIRECTORY);
}

/** The entry `name` in `dirFd` as it is (a link is described, not followed). */
export function lstatAt(dirFd: number, name: EntryName): Stats {
  return lstatSync(entryPath(dirFd, name));
}

/** lstatAt, or null when the entry is not there or cannot be looked at. */
export function lstatAtOrNull(dirFd: number, name: EntryName): Stats | null {
  try {
    return lstatAt(dirFd, name);
  } catch {
    return null;
  }
}

/** The target text of the link `name` in `dirFd`. */
export function readlinkAt(dirFd: number, name: EntryName): string {
  return readlinkSync(entryPath(dirFd, name), 'utf8');
}

/** Makes the directory `name` in `dirFd`; false when something of that name is already there. */
export function mkdirAt(dirFd: number, name: string, mode: number): boolean {
  try {
    mkdirSync(entryPath(dirFd, name), { mode });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/** Makes the link `name` in `dirFd` pointing at `target` (the text, never resolved here). */
export function symlinkAt(target: string, dirFd: number, name: string): void {
  symlinkSync(target, entryPath(dirFd, name));
}

/** Removes the non-directory `name` in `dirFd`. */
export function unlinkAt(dirFd: number, name: EntryName): void {
  unlinkSync(entryPath(dirFd, name));
}

/** Sets the mode of an open descriptor (O_PATH descriptors included, which fchmod refuses). */
/** Moves one entry of a directory into another on the same filesystem; a link is moved as a link, never followed. */
export function renameAt(fromDir: number, fromName: EntryName, toDir: number, toName: EntryName): void {
  renameSync(entryPath(fromDir, fromName), entryPath(toDir, toName));
}

export function chmodDescriptor(fd: number, mode: number): void {
  chmodSync(descriptorPath(fd), mode);
}

/** The same file as `fd` (an O_PATH descriptor, say) opened again with `flags`: the inode, never a name. */
export function reopen(fd: number, flags: number): number {
  return openSync(descriptorPath(fd), flags);
}

/** A directory stream of an open directory (the caller closes it): for walks that stop after a bound. */
export function openDirectoryStream(fd: number, opts: { bufferSize?: number; raw?: boolean } = {}): Dir {
  return opendirSync(descriptorPath(fd), {
    ...(opts.bufferSize ? { bufferSize: opts.bufferSize } : {}),
    ...(opts.raw ? { encoding: 'buffer' as BufferEncoding } : {}),
  });
}

/**
 * The entries of an open directory, in byte order of their names, links described not
 * followed; at most `max` (then `cut`). Names are their bytes: a name that is not UTF-8 is
 * opened as itself, never as a lossy decode that names another file.
 */
export function listDirectory(fd: number, max = Infinity): { entries: Dirent<Buffer>[]; cut: boolean } {
  const entries: Dirent<Buffer>[] = [];
  let cut = false;
  const dir = openDirectoryStream(fd, { raw: true });
  try {
    for (let e = dir.readSync() as Dirent<Buffer> | null; e !== null; e = dir.readSync() as Dirent<Buffer> | null) {
      if (entries.length >= max) {
        cut = true;
        break;
      }
      entries.push(e);
    }
  } finally {
    dir.closeSync();
  }
  return { entries: entries.sort((a, b) => Buffer.compare(a.name, b.name)), cut };
}

/**
 * Walks the directories `parts` down from `dirFd`, each opened with `flags` | O_DIRECTORY |
 * O_NOFOLLOW from the one before; `track` receives every descriptor (the caller closes them).
 * Returns the last descriptor, or the failing component and its errno code.
 */
export function walkDirectories(
  dirFd: number,
  parts: readonly string[],
  track: (fd: number) => number,
  flags: number = O_PATH,
): { fd: number } | { at: string; code: string } {
  let fd = dirFd;
  let at = '';
  for (const part of parts) {
    at = at ? `${at}/${part}` : part;
    try {
      fd = track(openDirectoryAt(fd, part, flags));
    } catch (e) {
      return { at, code: (e as NodeJS.ErrnoException).code ?? (e as Error).message };
    }
  }
  return { fd };
}

/** Runs `work` with descriptors that are all closed afterwards, in reverse order, except `keep` ones work returns. */
export function withDescriptors<T>(work: (track: (fd: number) => number, keep: (fd: number) => number) => T): T {
  const fds: number[] = [];
  const kept = new Set<number>();
  try {
    return work(
      (fd) => (fds.push(fd), fd),
      (fd) => (kept.add(fd), fd),
    );
  } finally {
    for (const fd of fds.reverse()) if (!kept.has(fd)) closeSync(fd);
  }
}

/** Flags of an open for reading that never blocks (a FIFO) and never takes a terminal. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** Runs `work` on the file `open(READ_FLAGS)` opens, closed afterwards; null when it cannot be opened. */
export function withFileForReading<T>(open: (flags: number) => number, work: (fd: number) => T): T | null {
  let fd: number;
  try {
    fd = open(READ_FLAGS);
  } catch {
    return null;
  }
  try {
    return work(fd);
  } finally {
    closeSync(fd);
  }
}

/** "dev:ino:ctime" of the regular file `name` in `dirFd`, never following a link or blocking on a FIFO; null otherwise. */
export function fileIdentityAt(dirFd: number, name: EntryName): string | null {
  return withFileForReading(
    (flags) => openAt(dirFd, name, flags),
    (fd) => {
      const st = fstatSync(fd, { bigint: true });
      return st.isFile() ? `${st.dev}:${st.ino}:${st.ctimeNs}` : null;
    },
  );
}

/** Reads at most `max` bytes of an open file from where it stands. */
export function readUpTo(fd: number, max: number): Buffer {
  const buf = Buffer.alloc(Math.max(1, Math.min(max, 1024 * 1024)));
  const chunks: Buffer[] = [];
  let total = 0;
  while (total < max) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, max - total), null);
    if (n <= 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
    total += n;
  }
  return Buffer.concat(chunks);
}

/** What an open descriptor holds when it is a regular file of at most `maxBytes`: its bytes, `{ tooLarge }`, or null. */
export function readOpenedRegular(fd: number, maxBytes: number): Buffer | { tooLarge: number } | null {
  const st = fstatSync(fd);
  if (!st.isFile()) return null;
  if (st.size > maxBytes) return { tooLarge: st.size };
  // At most the size it had when it was opened: a file growing meanwhile is not followed.
  return readUpTo(fd, st.size);
}

/**
 * The regular file `name` in `dirFd` (no link followed, a FIFO or device never opened for a
 * blocking read), as readOpenedRegular says; null when it is not there.
 */
export function readRegularAt(dirFd: number, name: EntryName, maxBytes: number): Buffer | { tooLarge: number } | null {
  return withFileForReading(
    (flags) => openAt(dirFd, name, flags),
    (fd) => readOpenedRegular(fd, maxBytes),
  );
}

/** Writes all of `content` to an open file. */
export function writeAll(fd: number, content: Buffer): void {
  for (let off = 0; off < content.length;) off += writeSync(fd, content, off);
}

/**
 * Atomically replaces (or creates) `name` in `dirFd` with `content`: a new file (O_EXCL, so
 * never an existing file or a link's target) is written, `prepare` may set its owner, and it
 * is renamed over the name. A link or hard link at `name` is replaced, never written through.
 */
export function replaceAt(dirFd: number, name: string, content: Buffer, mode: number, prepare?: (fd: number) => void): void {
  oneComponent(name);
  const tmp = `.forge-write-${randomBytes(6).toString('hex')}`;
  const fd = openAt(dirFd, tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
  try {
    writeAll(fd, content);
    // The umask narrowed the mode at creation: set it as asked.
    chmodDescriptor(fd, mode);
    prepare?.(fd);
  } catch (e) {
    closeSync(fd);
    unlinkAt(dirFd, tmp);
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(entryPath(dirFd, tmp), entryPath(dirFd, name));
  } catch (e) {
    unlinkAt(dirFd, tmp);
    throw e;
  }
}

/** Pure: the components of a relative path given as text or bytes; null when one is `..` or it is absolute or empty. */
function componentsOf(rel: EntryName): EntryName[] | null {
  const bytes = typeof rel === 'string' ? Buffer.from(rel) : rel;
  if (bytes[0] === 0x2f) return null;
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === 0x2f) {
      const part = bytes.subarray(start, i);
      start = i + 1;
      if (part.length === 0 || (part.length === 1 && part[0] === 0x2e)) continue;
      if (part.length === 2 && part[0] === 0x2e && part[1] === 0x2e) return null;
      parts.push(part);
    }
  }
  if (parts.length === 0) return null;
  return typeof rel === 'string' ? parts.map((p) => p.toString()) : parts;
}

/**
 * Runs `work` on the directory that holds the last component of `rel` beneath the directory
 * `top` (the runner's own path: followed), every directory on the way opened without following
 * a link, and that last name. Throws the errno of the step that failed.
 */
function atParentBeneath<T>(top: string, rel: EntryName, work: (dirFd: number, name: EntryName) => T): T {
  const parts = componentsOf(rel);
  if (!parts) throw Object.assign(new Error(`${String(rel)} is not a relative path beneath ${top}`), { code: 'EINVAL' });
  return withDescriptors((track) => {
    let fd = track(openSync(top, O_PATH | constants.O_DIRECTORY));
    for (const part of parts.slice(0, -1)) fd = track(openDirectoryAt(fd, part));
    return work(fd, parts.at(-1)!);
  });
}

/** Opens the path `rel` beneath `top` (no link followed on the way or at the end) with `flags`; the caller closes it. */
export function openBeneathPath(top: string, rel: EntryName, flags: number): number {
  return atParentBeneath(top, rel, (dirFd, name) => openAt(dirFd, name, flags));
}

/** The entry `rel` beneath `top` as it is (a link described, not followed; no link followed on the way), or null. */
export function lstatBeneathPath(top: string, rel: EntryName): Stats | null {
  try {
    return atParentBeneath(top, rel, (dirFd, name) => lstatAt(dirFd, name));
  } catch {
    return null;
  }
}
