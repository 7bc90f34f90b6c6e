import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { lstatAt, O_PATH, openAt, readlinkAt, readUpTo, reopen } from './beneath.js';

/**
 * What a repository (or a tree a cell wrote) names is opened beneath a directory the runner
 * chose, one component at a time, never following a link in any of them: a committed
 * `.forge -> /etc`, `gitdata -> ../.git` or `.forgeinclude -> /proc/self/fd/0` is refused
 * where it stands, before anything is read through it.
 */
export type Beneath<T> = { kind: 'absent' } | { kind: 'refused'; why: string } | ({ kind: 'ok' } & T);

/** Pure: why `rel` cannot name an entry beneath a directory, or null (no absolute path, `..`, NUL). */
export function refuseRelativePath(rel: string): string | null {
  if (rel.includes('\0')) return 'contains a NUL byte';
  if (rel.startsWith('/')) return 'is an absolute path';
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) return 'names the directory itself';
  if (parts.includes('..')) return 'leaves the directory (..)';
  return null;
}

function errnoOf(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
}

/**
 * Walks `rel` down from the open directory `dirFd`, each step without following a link, and
 * opens the last component with `lastFlags` (O_NOFOLLOW added). `onStep` receives every
 * descriptor opened (the caller closes them). A link anywhere on the way is refused by name.
 */
function walkBeneath(
  dirFd: number,
  rel: string,
  lastFlags: number,
  track: (fd: number) => number,
): { kind: 'absent' } | { kind: 'refused'; why: string } | { kind: 'ok'; fd: number } {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  let fd = dirFd;
  let at = '';
  for (const [i, part] of parts.entries()) {
    at = at ? `${at}/${part}` : part;
    const last = i === parts.length - 1;
    try {
      fd = track(openAt(fd, part, last ? lastFlags : O_PATH | constants.O_DIRECTORY));
    } catch (e) {
      const code = errnoOf(e);
      if (code === 'ENOENT') return { kind: 'absent' };
      // O_NOFOLLOW on a link gives ELOOP; O_DIRECTORY on a link (or a file) gives ENOTDIR.
      if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') {
        return { kind: 'refused', why: `${at} is ${linkOrNot(fd, part)}` };
      }
      return { kind: 'refused', why: `${at} cannot be opened (${code})` };
    }
  }
  return { kind: 'ok', fd };
}

function linkOrNot(parentFd: number, name: string): string {
  try {
    const fd = openAt(parentFd, name, O_PATH);
    try {
      return fstatSync(fd).isSymbolicLink() ? 'a symbolic link' : 'not a directory';
    } finally {
      closeSync(fd);
    }
  } catch {
    return 'not a directory';
  }
}

/**
 * Runs `work` with `top` opened from `/` one component at a time without following a link,
 * and a `track` that records every descriptor it opens; all are closed afterwards except the
 * one `work` returns to keep (`keep`). A link on the way to `top` is refused by name.
 */
function beneath<T>(top: string, work: (topFd: number, track: (fd: number) => number) => Beneath<T> & { keep?: number }): Beneath<T> {
  const fds: number[] = [];
  const track = (fd: number) => (fds.push(fd), fd);
  let keep = -1;
  try {
    const root = track(openSync('/', O_PATH | constants.O_DIRECTORY));
    const rel = top.split('/').filter(Boolean).join('/');
    const opened = rel === '' ? ({ kind: 'ok', fd: root } as const) : walkBeneath(root, rel, O_PATH | constants.O_DIRECTORY, track);
    if (opened.kind === 'absent') return opened;
    if (opened.kind === 'refused') return { kind: 'refused', why: `/${opened.why}` };
    const result = work(opened.fd, track);
    keep = result.keep ?? -1;
    delete result.keep;
    return result;
  } finally {
    for (const fd of fds.reverse()) if (fd !== keep) closeSync(fd);
  }
}

/**
 * Reads the regular file `rel` beneath `top`: `top` itself is opened without following links,
 * then every component below it; the file must be a regular file (a FIFO, a device or
 * /dev/zero never block or grow memory) of at most `maxBytes`.
 */
export function readFileBeneath(top: string, rel: string, maxBytes: number): Beneath<{ bytes: Buffer }> {
  const bad = refuseRelativePath(rel);
  if (bad) return { kind: 'refused', why: `${rel} ${bad}` };
  return beneath<{ bytes: Buffer }>(top, (topFd, track) => {
    const opened = walkBeneath(topFd, rel, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY, track);
    if (opened.kind !== 'ok') return opened;
    const st = fstatSync(opened.fd);
    if (!st.isFile()) return { kind: 'refused', why: `${rel} is not a regular file` };
    if (st.size > maxBytes) return { kind: 'refused', why: `${rel} is ${st.size} bytes (at most ${maxBytes} are read)` };
    return { kind: 'ok', bytes: readUpTo(opened.fd, st.size) };
  });
}

/**
 * The directory `rel` beneath `top` ('' for `top` itself), reached without following a link
 * anywhere from `/`: its path (real, since no link was on the way) and device and inode.
 * `top` is absolute and normalized.
 */
export function statDirectoryBeneath(top: string, rel: string): Beneath<{ path: string; dev: number; ino: number }> {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  const bad = parts.length === 0 ? null : refuseRelativePath(rel);
  if (bad) return { kind: 'refused', why: `${rel} ${bad}` };
  return beneath<{ path: string; dev: number; ino: number }>(top, (topFd, track) => {
    let fd = topFd;
    if (parts.length > 0) {
      const opened = walkBeneath(topFd, rel, O_PATH | constants.O_DIRECTORY, track);
      if (opened.kind !== 'ok') return opened;
      fd = opened.fd;
    }
    const st = fstatSync(fd);
    return { kind: 'ok', path: [top.replace(/\/+$/, ''), ...parts].join('/') || '/', dev: st.dev, ino: st.ino };
  });
}

/**
 * Opens the entry `rel` beneath `top` for copying: a regular file (a read descriptor, at most
 * `maxBytes`; the caller closes it) or a symbolic link (its target text: the link itself is
 * copied, never what it points to).
 */
export function openEntryBeneath(
  top: string,
  rel: string,
  maxBytes: number,
): Beneath<{ type: 'file'; fd: number; size: number; mode: number } | { type: 'link'; target: string }> {
  const bad = refuseRelativePath(rel);
  if (bad) return { kind: 'refused', why: `${rel} ${bad}` };
  return beneath<{ type: 'file'; fd: number; size: number; mode: number } | { type: 'link'; target: string }>(top, (topFd, track) => {
    const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
    const parent = parts.length > 1 ? walkBeneath(topFd, parts.slice(0, -1).join('/'), O_PATH | constants.O_DIRECTORY, track) : null;
    if (parent && parent.kind !== 'ok') return parent;
    const dirFd = parent ? parent.fd : topFd;
    const name = parts.at(-1)!;
    let fd: number;
    try {
      fd = track(openAt(dirFd, name, O_PATH));
    } catch (e) {
      return errnoOf(e) === 'ENOENT' ? { kind: 'absent' } : { kind: 'refused', why: `${rel} cannot be opened (${errnoOf(e)})` };
    }
    const st = fstatSync(fd);
    if (st.isSymbolicLink()) {
      // readlink through the parent's descriptor: the link read is the one that was opened.
      const target = readlinkAt(dirFd, name);
      const now = lstatAt(dirFd, name);
      if (now.ino !== st.ino || now.dev !== st.dev) return { kind: 'refused', why: `${rel} changed while it was opened` };
      return { kind: 'ok', type: 'link', target };
    }
    if (!st.isFile()) return { kind: 'refused', why: `${rel} is not a regular file` };
    if (st.size > maxBytes) return { kind: 'refused', why: `${rel} is ${st.size} bytes (at most ${maxBytes} are copied)` };
    const readFd = track(reopen(fd, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY));
    const again = fstatSync(readFd);
    if (!again.isFile() || again.ino !== st.ino || again.dev !== st.dev)
      return { kind: 'refused', why: `${rel} changed while it was opened` };
    return { kind: 'ok', type: 'file', fd: readFd, size: again.size, mode: again.mode, keep: readFd };
  });
}
