import { chmodSync, chownSync, fstatSync } from 'node:fs';
import { descriptorPath } from '../hostguard/beneath.js';
import { describeScanStop, type HazardScan, neutralizeHazards } from '../hostguard/neutralizeHazards.js';

/**
 * A tree the hazard walk could not finish may still hold setuid files and FIFOs that anyone
 * who can reach them could use: its top becomes the runner's own, mode 0700, through the
 * pinned descriptor `fd` (never by path, which could lead elsewhere by now). The mode goes
 * first, so other users are shut out before the owner changes. Returns null when done, else
 * why it could not be done.
 */
export function withholdTree(fd: number): string | null {
  const self = descriptorPath(fd);
  const uid = process.geteuid?.() ?? 0;
  const gid = process.getegid?.() ?? 0;
  try {
    chmodSync(self, 0o700);
    chownSync(self, uid, gid);
    chmodSync(self, 0o700);
    const st = fstatSync(fd);
    if (st.uid !== uid || (st.mode & 0o7777) !== 0o700) return `its top is still uid ${st.uid}, mode ${(st.mode & 0o7777).toString(8)}`;
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? 'error';
  }
}

/** Pure: what a cell's result says about a withheld tree: why the walk stopped, and who can reach the tree now. */
export function describeWithheld(why: string, runnerUid: number, lockFailed: string | null): string {
  const hold = lockFailed
    ? `it could not be shut to other users (${lockFailed}): remove it now`
    : `only uid ${runnerUid} can enter it now (mode 0700)`;
  return `${why}, so it was not checked for setuid files, FIFOs and device nodes; the worktree is withheld: ${hold}`;
}

/**
 * The hazard walk of the tree whose pinned descriptor is `fd`, complete or withheld: a walk
 * that stops early (its entry cap, its deadline, a directory it cannot read) or fails shuts
 * the tree at once, before anything else runs, and `withheld` says why.
 */
export function neutralizeOrWithhold(fd: number, opts: Parameters<typeof neutralizeHazards>[1]): HazardScan & { withheld: string | null } {
  let scan: HazardScan;
  let why: string | null;
  try {
    scan = neutralizeHazards(descriptorPath(fd), opts);
    why = scan.incomplete ? describeScanStop(scan.incomplete) : null;
  } catch (e) {
    scan = { neutralized: [], incomplete: null, tooLong: 0 };
    why = `the hazard scan of the worktree failed (${(e as Error).message.split('\n')[0]})`;
  }
  if (!why) return { ...scan, withheld: null };
  return { ...scan, withheld: describeWithheld(why, process.geteuid?.() ?? 0, withholdTree(fd)) };
}
