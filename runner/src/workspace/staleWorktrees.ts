import { existsSync, readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, relative, sep } from 'node:path';
import {
  attemptsDir,
  BRANCH_PREFIX,
  destroyAttemptWorktree,
  locateRepository,
  LOCK_KEEP,
  LOCK_OWNER_PREFIX,
  removeTree,
} from './attemptWorktree.js';
import { runCacheOwner } from './runCacheDir.js';
import { repoTarget } from './repoLocation.js';
import { runGit } from './safeGit.js';

export interface WorktreeEntry {
  path: string;
  branch: string | null;
  locked: string | null;
  prunable: boolean;
}

export type WorktreeVerdict = { action: 'remove'; reason: string } | { action: 'leave'; reason: string };

/** Pure: `git worktree list --porcelain` -> entries. */
export function parseWorktreeList(text: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean);
    const path = lines.find((l) => l.startsWith('worktree '))?.slice('worktree '.length);
    if (!path) continue;
    const branch = lines.find((l) => l.startsWith('branch '))?.slice('branch refs/heads/'.length) ?? null;
    const lockedLine = lines.find((l) => l === 'locked' || l.startsWith('locked '));
    entries.push({
      path,
      branch,
      locked: lockedLine === undefined ? null : lockedLine.slice('locked'.length).trim(),
      prunable: lines.some((l) => l.startsWith('prunable')),
    });
  }
  return entries;
}

/** Pure: what gc does with one forge worktree, given which runner processes are alive. */
export function judgeWorktree(e: WorktreeEntry, host: string, isAlive: (pid: number) => boolean): WorktreeVerdict {
  if (e.prunable) return { action: 'remove', reason: 'its directory is gone' };
  if (e.locked === LOCK_KEEP) return { action: 'leave', reason: 'kept for review' };
  const owner = e.locked?.startsWith(LOCK_OWNER_PREFIX) ? /pid=(\d+)(?: host=(\S+))?/.exec(e.locked) : null;
  if (!owner)
    return { action: 'remove', reason: e.locked === null ? 'not locked by any runner' : `locked by something else (${e.locked})` };
  const pid = Number(owner[1]);
  if (owner[2] && owner[2] !== host) return { action: 'leave', reason: `owned by a runner on another host (${owner[2]})` };
  return isAlive(pid)
    ? { action: 'leave', reason: `in use by runner pid ${pid}` }
    : { action: 'remove', reason: `its runner (pid ${pid}) is gone` };
}

export interface GcItem {
  kind: 'worktree' | 'container' | 'vm' | 'layer' | 'swarm' | 'cache' | 'registry';
  id: string;
  action: 'removed' | 'would remove' | 'left';
  reason: string;
}

export function processAlive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** Finds (and unless dryRun removes) attempt worktrees and branches left behind by crashed runners. */
export async function collectStaleWorktrees(repoTop: string, dryRun: boolean): Promise<GcItem[]> {
  const loc = await locateRepository(repoTop);
  const out = (await runGit(repoTarget(loc), ['worktree', 'list', '--porcelain'])).text;
  const cellsDir = attemptsDir(loc);
  const items: GcItem[] = [];
  for (const e of parseWorktreeList(out)) {
    const rel = relative(cellsDir, e.path);
    if (rel === '' || rel.startsWith('..') || rel.includes(sep)) continue;
    const verdict = judgeWorktree(e, hostname(), processAlive);
    if (verdict.action === 'leave') {
      items.push({ kind: 'worktree', id: e.path, action: 'left', reason: verdict.reason });
      continue;
    }
    if (!dryRun) {
      const branch = e.branch?.startsWith(BRANCH_PREFIX) ? e.branch : `${BRANCH_PREFIX}${rel}`;
      await destroyAttemptWorktree({ repo: repoTop, path: e.path, branch });
    }
    items.push({ kind: 'worktree', id: e.path, action: dryRun ? 'would remove' : 'removed', reason: verdict.reason });
  }
  items.push(...collectStaleRunCaches(cellsDir, dryRun));
  return items;
}

/** A run's build caches (fix/baselineCaches.ts) whose runner is gone: "<pid>-<run>-build-cache" beside the worktrees. */
function collectStaleRunCaches(cellsDir: string, dryRun: boolean): GcItem[] {
  const items: GcItem[] = [];
  let names: string[];
  try {
    names = readdirSync(cellsDir);
  } catch {
    return [];
  }
  for (const name of names) {
    const owner = runCacheOwner(name);
    // Only this host's: a runner elsewhere (another machine on a shared disk, a container) may be alive.
    if (!owner || owner.host !== hostname() || processAlive(owner.pid)) continue;
    const id = join(cellsDir, name);
    const reason = `run ${owner.runId}'s build cache; its runner (pid ${owner.pid}) is gone`;
    try {
      if (!dryRun) removeTree(id);
      items.push({ kind: 'cache', id, action: dryRun ? 'would remove' : 'removed', reason });
    } catch (e) {
      items.push({
        kind: 'cache',
        id,
        action: 'left',
        reason: `${reason}, but it could not be removed: ${(e as Error).message.split('\n')[0]}`,
      });
    }
  }
  return items;
}
