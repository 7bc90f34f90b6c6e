import { isAbsolute } from 'node:path';
import { isInside } from './pathInside.js';

/** System trees no cell may get read-write, nor anything below them. */
export const SYSTEM_TREES = [
  '/etc',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/boot',
  '/dev',
  '/proc',
  '/sys',
  '/run',
];

/** Paths whose protection a worktree mounted at them or above them would undo. */
const PROTECTED_PATHS = ['/var/lib/docker', '/var/run', '/var/log'];

export interface WorktreeLocationFacts {
  /** Paths a cell sees hidden (tmpfs or /dev/null masks). */
  masked: string[];
  runnerHome: string | undefined;
  stateDir: string;
}

/**
 * Pure: why `path` (a real, absolute path) must not be a cell's read-write worktree, or
 * null. A worktree is mounted over the cell's view of the host: at `/`, a system directory,
 * the runner's home or state directory, or above any hidden path it would undo the masks.
 */
export function refuseWorktreeLocation(path: string, facts: WorktreeLocationFacts): string | null {
  if (!isAbsolute(path)) return `worktree ${path} is not an absolute path`;
  if (path === '/') return 'worktree / is the whole host filesystem';
  const system = SYSTEM_TREES.find((t) => isInside(path, t));
  if (system) return `worktree ${path} is ${path === system ? 'the system directory' : 'inside the system directory'} ${system}`;
  if (isInside(path, facts.stateDir) || isInside(facts.stateDir, path))
    return `worktree ${path} holds or is inside the runner's state directory ${facts.stateDir} (cell logs, the store)`;
  if (facts.runnerHome && facts.runnerHome !== '/' && isInside(facts.runnerHome, path))
    return `worktree ${path} is or contains the runner's home directory ${facts.runnerHome}`;
  const covered = [...facts.masked, ...PROTECTED_PATHS].find((m) => isInside(m, path));
  if (covered) return `worktree ${path} ${covered === path ? 'is' : 'contains'} ${covered}, which cells must not see`;
  return null;
}
