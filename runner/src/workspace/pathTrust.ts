/** One directory on the way from / to a worktree, as fstat saw it. */
export interface PathStep {
  path: string;
  uid: number;
  mode: number;
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
