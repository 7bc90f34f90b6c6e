import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

/**
 * Host mounts of a pooled VM's hand-over share. The share directory is a shared mount, so a
 * worktree bind-mounted under it after the VM booted reaches the share's virtiofsd (whose
 * bubblewrap namespace holds a slave copy). While such a mount exists, the directory holds the
 * user's worktree: it is removed only once nothing is mounted under it any more.
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

function run(args: string[]): string | null {
  const r = spawnSync('mount', args, { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? null : (r.stderr || r.error?.message || `mount exited ${r.status}`).trim().split('\n')[0]!;
}

/** Makes `dir` a shared mount of itself (before the share's virtiofsd starts). */
export function makeSharedMount(dir: string): void {
  const err = run(['--bind', '--make-shared', dir, dir]);
  if (err) throw new Error(`cannot make the hand-over directory ${dir} a shared mount: ${err}`);
}

/** Mounts the worktree at `target` read-write, its `.git` read-only over it. */
export function mountWorktree(top: string, gitEntry: string | null, target: string, gitTarget: string | null): void {
  const err = run(['--bind', top, target]);
  if (err) throw new Error(`cannot hand the worktree over to the VM: ${err}`);
  if (gitEntry && gitTarget) {
    const gitErr = run(['-o', 'bind,ro', gitEntry, gitTarget]);
    if (gitErr) {
      unmountUnder(target);
      throw new Error(`cannot hand the worktree's .git over read-only: ${gitErr}`);
    }
  }
}

/** Unmounts everything at or under `dir`; true once nothing is mounted there. */
export function unmountUnder(dir: string): boolean {
  const read = () => mountsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), dir);
  for (const m of read()) spawnSync('umount', ['-l', m], { timeout: 10_000 });
  return read().length === 0;
}

/**
 * Removes a VM directory, never through a mount: if anything stays mounted under it (a
 * worktree), it is left for `forge-runner gc` and the answer says so.
 */
export function removeVmDir(dir: string): boolean {
  if (!unmountUnder(dir)) return false;
  rmSync(dir, { recursive: true, force: true });
  return true;
}
