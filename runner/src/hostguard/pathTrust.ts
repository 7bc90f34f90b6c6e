/** One directory on the way from / to a worktree, as fstat saw it. */
export interface PathStep {
  path: string;
  uid: number;
  mode: number;
  /** Device and inode: the same directory reached through another path (a bind mount) has the same. */
  dev: number;
  ino: number;
}

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/**
 * Pure: the first directory on the way to a worktree (steps from / down to the worktree itself)
 * in which a user outside `trusted` could put another directory in the next one's place, and
 * why; null when none. The runner's host steps after a cell name the worktree by path: whoever
 * can rename a directory above it can point those steps (run as the runner's user) anywhere.
 * A sticky directory (/tmp) is safe when the entry below it is owned by a trusted user.
 */
export function untrustedStep(steps: readonly PathStep[], trusted: ReadonlySet<number>): { path: string; why: string } | null {
  for (let i = 0; i + 1 < steps.length; i++) {
    const dir = steps[i]!;
    const next = steps[i + 1]!;
    if (!trusted.has(dir.uid)) return { path: dir.path, why: `is owned by uid ${dir.uid}` };
    if ((dir.mode & GROUP_OR_OTHER_WRITE) === 0) continue;
    const by = (dir.mode & 0o002) !== 0 ? 'other users' : 'its group';
    if ((dir.mode & STICKY) === 0) return { path: dir.path, why: `is writable by ${by}` };
    if (!trusted.has(next.uid)) return { path: dir.path, why: `is writable by ${by} and ${next.path} in it is owned by uid ${next.uid}` };
  }
  return null;
}

/**
 * Pure: like untrustedStep for a directory whose own entries the runner reads by name after a
 * cell (git data: index, refs, alternates), so the directory itself must also be owned by one
 * of `owners` and writable by nobody else. Null when it and the way to it are trusted.
 */
export function untrustedDirectory(
  steps: readonly PathStep[],
  trusted: ReadonlySet<number>,
  owners: ReadonlySet<number>,
): { path: string; why: string } | null {
  const above = untrustedStep(steps, trusted);
  if (above) return above;
  const self = steps[steps.length - 1];
  if (!self) return null;
  if (!owners.has(self.uid)) return { path: self.path, why: `is owned by uid ${self.uid}` };
  if ((self.mode & GROUP_OR_OTHER_WRITE) !== 0)
    return { path: self.path, why: `is writable by ${(self.mode & 0o002) !== 0 ? 'other users' : 'its group'}` };
  return null;
}
