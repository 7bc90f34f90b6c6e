import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { InputError } from '../protocol/inputError.js';
import { O_PATH, openAt, openDirectoryAt } from './beneath.js';
import type { PathStep } from './pathTrust.js';

export { O_PATH } from './beneath.js';

/** The name of an open descriptor that other processes of the runner (mount, bwrap) can use too. */
export const fdPath = (fd: number): string => `/proc/${process.pid}/fd/${fd}`;

/**
 * Opens the directory `path` one component at a time, never following a symlink in any of them
 * (a parent swapped for a link since it was checked is refused): an O_PATH descriptor, and the
 * owner and mode of every directory on the way (/ first, the directory itself last).
 * `track` receives each descriptor opened, so the caller closes them all (the last one is
 * the result). Throws InputError naming `what` when a component is missing or not a directory.
 */
export function openDirectoryNoFollow(
  path: string,
  track: (fd: number) => number,
  what = 'the worktree',
): { fd: number; steps: PathStep[] } {
  let fd = track(openSync('/', O_PATH | constants.O_DIRECTORY));
  const steps: PathStep[] = [stepOf('/', fd)];
  let at = '';
  for (const part of path.split('/').filter(Boolean)) {
    at += `/${part}`;
    try {
      fd = track(openDirectoryAt(fd, part));
    } catch (e) {
      throw new InputError(`${what} ${path} changed since it was checked (${at}: ${(e as NodeJS.ErrnoException).code})`);
    }
    steps.push(stepOf(at, fd));
  }
  return { fd, steps };
}

function stepOf(path: string, fd: number): PathStep {
  const st = fstatSync(fd);
  return { path, uid: st.uid, mode: st.mode, dev: st.dev, ino: st.ino };
}

/**
 * Runs `work` with an O_PATH descriptor of the directory `path`, opened without following
 * links and checked to be `identity` (the directory that was validated before the cell) when
 * given; every descriptor is closed afterwards. Throws InputError when it is another one.
 */
export function withPinnedDirectory<T>(
  path: string,
  identity: { dev: number; ino: number } | undefined,
  work: (fd: number, steps: PathStep[]) => T,
  what = 'the worktree',
): T {
  const fds: number[] = [];
  const track = (fd: number) => (fds.push(fd), fd);
  try {
    const { fd, steps } = openDirectoryNoFollow(path, track, what);
    if (identity) {
      const now = fstatSync(fd);
      if (now.dev !== identity.dev || now.ino !== identity.ino)
        throw new InputError(`${what} ${path} is not the directory that was checked`);
    }
    return work(fd, steps);
  } finally {
    for (const fd of fds.reverse()) closeSync(fd);
  }
}

/** A worktree held open from its check until the cell is over: names a root process can mount from. */
export interface HeldWorktree {
  /** /proc/<runner>/fd/N of the worktree directory. */
  top: string;
  /** /proc/<runner>/fd/N of its `.git` (file or directory), or null when it has none. */
  git: string | null;
  close(): void;
}

/**
 * Opens the worktree that was checked (no link followed anywhere on the way, the same
 * device and inode) and its `.git`, and keeps both open: a sandbox that binds these names
 * binds exactly them, whatever happens to the path meanwhile. Throws InputError when the
 * worktree or its `.git` changed since the check, or `.git` is a link or neither a file nor a directory.
 */
export function holdWorktree(
  path: string,
  identity: { dev: number; ino: number } | undefined,
  withGit: boolean,
  gitIdentity?: { dev: number; ino: number },
): HeldWorktree {
  const fds: number[] = [];
  const track = (fd: number) => (fds.push(fd), fd);
  const close = () => {
    for (const fd of fds.splice(0)) closeSync(fd);
  };
  try {
    const { fd } = openDirectoryNoFollow(path, track);
    const now = fstatSync(fd);
    if (identity && (now.dev !== identity.dev || now.ino !== identity.ino))
      throw new InputError(`the worktree ${path} is not the directory that was checked`);
    let gitFd: number | null = null;
    if (withGit) {
      try {
        gitFd = track(openAt(fd, '.git', O_PATH));
      } catch (e) {
        throw new InputError(`the worktree's .git changed since it was checked (${(e as NodeJS.ErrnoException).code})`);
      }
      const st = fstatSync(gitFd);
      if (!st.isDirectory() && !st.isFile()) throw new InputError("the worktree's .git is neither a directory nor a file (a symlink?)");
      if (gitIdentity && (st.dev !== gitIdentity.dev || st.ino !== gitIdentity.ino))
        throw new InputError(`the worktree's .git is not the one that was checked; is something changing ${path}?`);
    }
    // Only the two named descriptors stay open; the walk's others are closed now.
    for (const f of fds.splice(0)) {
      if (f === fd || f === gitFd) fds.push(f);
      else closeSync(f);
    }
    return { top: fdPath(fd), git: gitFd === null ? null : fdPath(gitFd), close };
  } catch (e) {
    close();
    throw e;
  }
}
