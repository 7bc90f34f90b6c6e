import { spawnSync } from 'node:child_process';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../protocol/inputError.js';
import { O_PATH, openAt } from '../../hostguard/beneath.js';
import { fdPath, openDirectoryNoFollow } from '../../hostguard/pinnedDirectory.js';

/**
 * Host mounts of a pooled VM's hand-over share. The share directory is a shared mount of its
 * own, so a worktree bind-mounted under it after the VM booted reaches the share's virtiofsd
 * (whose bubblewrap namespace holds a slave copy). While such a mount exists the directory
 * holds the user's worktree: it is removed only once nothing is mounted under it any more.
 *
 * The worktree is hostile input (its owner, or an agent, may swap `.git` for a symlink at any
 * moment): mount(8) never resolves a path inside it. Both ends are opened first (O_PATH,
 * O_NOFOLLOW) and named by /proc/<runner>/fd/N, and the read-only `.git` is made in a private
 * staging mount and copied in whole (a remount of the copy would not reach the VM's side).
 */

/** Pure: mount points at or under `dir` in /proc/self/mountinfo text, deepest first. */
export function mountsUnder(mountinfo: string, dir: string): string[] {
  const unescape = (p: string) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const found = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map(unescape)
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(found)].sort((a, b) => b.length - a.length);
}

/** Pure: the mount options (rw/ro...) of the mount at exactly `point`, or null. */
export function mountOptions(mountinfo: string, point: string): string[] | null {
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ');
    if (f[4]?.replace(/\\040/g, ' ') === point) return (f[5] ?? '').split(',');
  }
  return null;
}

const mountinfo = () => readFileSync('/proc/self/mountinfo', 'utf8');

/** Runs mount(8) without path canonicalization; throws with its message. */
function mount(args: string[], what: string): void {
  const r = spawnSync('mount', ['--no-canonicalize', ...args], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) throw new Error(`${what}: ${(r.stderr || r.error?.message || `mount exited ${r.status}`).trim().split('\n')[0]}`);
}

/**
 * Before the VM's processes start: its directory becomes a private mount (nothing made under
 * it propagates out, even where / is shared) and its hand-over share a shared mount of a peer
 * group of its own (what is mounted there propagates to that VM's virtiofsd alone).
 */
export function prepareVmMounts(vmDir: string, shareDir: string): void {
  mount(['--bind', vmDir, vmDir], 'cannot make the VM directory a mount');
  mount(['--make-private', vmDir], 'cannot make the VM directory private');
  mount(['--bind', shareDir, shareDir], 'cannot make the hand-over directory a mount');
  mount(['--make-private', shareDir], 'cannot make the hand-over directory private');
  mount(['--make-shared', shareDir], 'cannot make the hand-over directory shared');
}

/**
 * Mounts the worktree `top` at `target` (inside the hand-over share) read-write, its `.git`
 * read-only, through the private staging directory `stage`. `identity` is what `top` was when
 * it was checked: the directory handed over must be that one. Whether `.git` is there is
 * looked at now, through the opened directory (not taken from the earlier check).
 */
export function mountWorktree(top: string, identity: { dev: number; ino: number } | undefined, stage: string, target: string): void {
  const fds: number[] = [];
  const track = (fd: number) => (fds.push(fd), fd);
  try {
    const topFd = openDirectoryNoFollow(top, track).fd;
    const now = fstatSync(topFd);
    if (identity && (now.dev !== identity.dev || now.ino !== identity.ino))
      throw new InputError(`the worktree ${top} is not the directory that was checked; refusing to hand it over`);
    let gitFd: number | null = null;
    try {
      gitFd = track(openAt(topFd, '.git', O_PATH));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (gitFd !== null) {
      const st = fstatSync(gitFd);
      if (!st.isDirectory() && !st.isFile())
        throw new InputError("the worktree's .git is neither a directory nor a file (a symlink?); refusing to hand it over");
    }
    mkdirSync(stage, { mode: 0o700 });
    mount(['--bind', fdPath(topFd), stage], 'cannot hand the worktree over to the VM');
    mount(['--make-private', stage], 'cannot make the worktree staging mount private');
    if (gitFd !== null) {
      const stageFd = track(openSync(stage, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW));
      const gitTarget = track(openAt(stageFd, '.git', O_PATH));
      const [a, b] = [fstatSync(gitFd), fstatSync(gitTarget)];
      if (a.dev !== b.dev || a.ino !== b.ino) throw new InputError("the worktree's .git changed while it was handed over; refusing");
      mount(['--bind', fdPath(gitFd), fdPath(gitTarget)], "cannot hand the worktree's .git over");
      // Only a mount exactly at stage/.git is made read-only: a name swapped meanwhile points elsewhere.
      const gitAt = join(stage, '.git');
      if (!mountsUnder(mountinfo(), stage).includes(gitAt))
        throw new InputError("the worktree's .git moved while it was handed over; refusing");
      // Its own (private) mount: nothing mounted later under the user's .git on the host reaches the VM.
      mount(['--make-private', gitAt], "cannot make the worktree's .git mount private");
      mount(['-o', 'remount,bind,ro', gitAt], "cannot make the worktree's .git read-only");
    }
    // The whole staged tree at once: its copies (the VM's virtiofsd's too) keep .git read-only.
    mount(['--rbind', stage, target], 'cannot hand the worktree over to the VM');
    if (gitFd !== null && !mountOptions(mountinfo(), join(target, '.git'))?.includes('ro'))
      throw new Error("the worktree's .git is not read-only in the hand-over share; refusing");
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

/** Unmounts everything at or under `dir`; true once nothing is mounted there. */
export function unmountUnder(dir: string): boolean {
  for (const m of mountsUnder(mountinfo(), dir)) spawnSync('umount', ['--no-canonicalize', '-l', m], { timeout: 10_000 });
  return mountsUnder(mountinfo(), dir).length === 0;
}

/**
 * Removes a VM directory, never through a mount: if anything stays mounted under it (a
 * worktree), or removal fails, it is left for `forge-runner gc` and the answer says why.
 */
export function removeVmDir(dir: string): string | null {
  if (!unmountUnder(dir)) return `something is still mounted under ${dir}`;
  try {
    rmSync(dir, { recursive: true, force: true });
    return null;
  } catch (e) {
    return `cannot remove ${dir}: ${(e as Error).message.split('\n')[0]}`;
  }
}
