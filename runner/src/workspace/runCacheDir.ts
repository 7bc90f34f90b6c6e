import { hostname } from 'node:os';

/*
 * A run's build caches live beside its attempts' worktrees (repair/fix/baselineCaches.ts), in a
 * directory named by its runner and run, so gc finds a crashed runner's and leaves a live one's.
 */

/** The run's cache directory name: its runner's pid and host first. */
export function runCacheDirName(runId: string, pid = process.pid, host = hostname()): string {
  return `${pid}@${host}-${runId}-build-cache`;
}

/** Pure: the runner (pid, host) and run of a cache directory's name, or null when it is no run's cache. */
export function runCacheOwner(name: string): { pid: number; host: string; runId: string } | null {
  const m = /^(\d+)@([^/]+?)-(run-[^/]+)-build-cache$/.exec(name);
  return m ? { pid: Number(m[1]), host: m[2]!, runId: m[3]! } : null;
}
