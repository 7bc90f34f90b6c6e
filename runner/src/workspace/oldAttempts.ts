import { hostname } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import type { RunRow, RunStore } from '../store/runStore.js';
import { attemptsDir, BRANCH_PREFIX, locateRepository } from './attemptWorktree.js';
import { branchOfRun, isOrphanBranch, judgeOldRun, orphanFacts, selectOldRuns, worktreeOfRun } from './oldRunSelection.js';
import { repoTarget } from './repoLocation.js';
import { discardRun, winnerBranchName } from './reviewWinner.js';
import { runGit } from './safeGit.js';
import { judgeWorktree, parseWorktreeList, processAlive, type WorktreeEntry } from './staleWorktrees.js';

/**
 * Branch hygiene (issue 31): the attempts of runs nobody reviewed within a retention, and
 * forge/attempt/* branches of runs the store no longer knows, found in the repositories the
 * store knows and removed only when asked (gc --older-than --yes, runs/discardOld). Removing a
 * run's attempts is what review/discard does, and the run is marked discarded.
 */

export interface OldRun {
  run_id: string;
  repo: string;
  issue: string;
  status: string;
  updated_at: string;
  age_s: number;
  branches: string[];
  worktrees: string[];
}

export interface OrphanBranch {
  repo: string;
  branch: string;
  age_s: number;
}

export interface OldAttempts {
  runs: OldRun[];
  orphans: OrphanBranch[];
  /** Repositories that could not be looked at, runs left because a live runner holds a worktree. */
  notes: string[];
}

export interface OldAttemptsOptions {
  olderThanS: number;
  /** Only these repositories (tops); all the store knows when absent. */
  repos?: string[];
  /** A run this runner (or another live one) is running. */
  inProgress?: (run: RunRow) => boolean;
  now?: number;
}

/** The issue's first line, as the Attempts view names a run. */
function issueTitle(issue: string): string {
  const line = issue.split('\n').find((l) => l.trim() !== '') ?? '';
  return line
    .trim()
    .replace(/^#+\s*/, '')
    .slice(0, 120);
}

/** A run still marked running by a live runner on this machine is in progress; one whose runner is gone is not. */
export const runningElsewhere = (run: RunRow): boolean => run.status === 'running' && processAlive(run.runner_pid);

interface RepoRefs {
  top: string;
  /** createdTime: when the branch was made, from its reflog's oldest entry; null when it has none. */
  branches: { branch: string; tipTime: number; createdTime: number | null }[];
  worktrees: WorktreeEntry[];
  cellsDir: string;
}

/** Every forge/attempt/* branch with its tip's commit time, and the repository's worktrees, read through safe git. */
async function readRepo(repo: string): Promise<RepoRefs> {
  const loc = await locateRepository(repo);
  const target = repoTarget(loc);
  const refs = await runGit(target, [
    'for-each-ref',
    '--format=%(refname)%00%(committerdate:unix)',
    '--end-of-options',
    `refs/heads/${BRANCH_PREFIX}`,
  ]);
  const branches = refs.text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [ref = '', time = '0'] = line.split('\0');
      return { branch: ref.slice('refs/heads/'.length), tipTime: Number(time) * 1000, createdTime: null as number | null };
    })
    .filter((b) => b.branch.startsWith(BRANCH_PREFIX));
  for (const b of branches) b.createdTime = await reflogCreated(target, b.branch);
  const worktrees = parseWorktreeList((await runGit(target, ['worktree', 'list', '--porcelain'])).text);
  return { top: loc.top, branches, worktrees, cellsDir: resolve(attemptsDir(loc)) };
}

/**
 * When a branch was made: the time of its reflog's oldest entry (ms), or null without a reflog
 * (core.logAllRefUpdates off, expired, or removed). A tip's commit date says nothing of when the
 * branch was made: attempt branches start at a run's base commit, which may be years old.
 */
async function reflogCreated(target: ReturnType<typeof repoTarget>, branch: string): Promise<number | null> {
  const out = await runGit(target, ['log', '-g', '--format=%gd', '--date=unix', '--end-of-options', `refs/heads/${branch}`]).catch(
    () => null,
  );
  const last = out?.text.split('\n').filter(Boolean).pop();
  const m = last ? /@\{(\d+)\}$/.exec(last) : null;
  return m ? Number(m[1]) * 1000 : null;
}

/** The run's worktrees under the attempts directory, and whether a live runner holds one. */
function runWorktrees(refs: RepoRefs, runId: string): { paths: string[]; heldBy: string | null } {
  const paths: string[] = [];
  let heldBy: string | null = null;
  for (const e of refs.worktrees) {
    if (resolve(dirname(e.path)) !== refs.cellsDir || !worktreeOfRun(basename(e.path), runId)) continue;
    paths.push(e.path);
    const v = judgeWorktree(e, hostname(), processAlive);
    if (v.action === 'leave' && v.reason !== 'kept for review') heldBy = v.reason;
  }
  return { paths, heldBy };
}

/** Finds (never removes) the old unreviewed runs with something on disk, and the orphan branches, per repository. */
export async function findOldAttempts(store: RunStore, o: OldAttemptsOptions): Promise<OldAttempts> {
  const now = o.now ?? Date.now();
  const inProgress = o.inProgress ?? runningElsewhere;
  const all = store.listRuns(1_000_000);
  const known = new Set(all.map((r) => r.id));
  const wanted = o.repos ? new Set(o.repos.map((r) => resolve(r))) : null;
  const repos = [...new Set(all.map((r) => r.repo))].filter((r) => !wanted || wanted.has(resolve(r)));
  const old = selectOldRuns(all, now, o.olderThanS, inProgress);
  const out: OldAttempts = { runs: [], orphans: [], notes: [] };
  for (const repo of repos) {
    let refs: RepoRefs;
    try {
      refs = await readRepo(repo);
    } catch (e) {
      out.notes.push(`${repo}: not looked at (${(e as Error).message.split('\n')[0]})`);
      continue;
    }
    const checkedOut = new Set(refs.worktrees.map((w) => w.branch).filter((b): b is string => b !== null));
    for (const { run, age_s } of old.filter((x) => x.run.repo === repo)) {
      const wts = runWorktrees(refs, run.id);
      const branches = refs.branches.filter((b) => branchOfRun(b.branch, run.id)).map((b) => b.branch);
      if (branches.length === 0 && wts.paths.length === 0) continue;
      if (wts.heldBy) {
        out.notes.push(`run ${run.id}: left, a worktree of it is ${wts.heldBy}`);
        continue;
      }
      out.runs.push({
        run_id: run.id,
        repo,
        issue: issueTitle(run.issue),
        status: run.status,
        updated_at: run.updated_at,
        age_s,
        branches,
        worktrees: wts.paths,
      });
    }
    for (const b of refs.branches) {
      const facts = orphanFacts(b, now, checkedOut.has(b.branch));
      if (isOrphanBranch(facts, known, o.olderThanS)) out.orphans.push({ repo, branch: b.branch, age_s: facts.age_s! });
      else if (facts.age_s === null && isOrphanBranch({ ...facts, age_s: Number.MAX_SAFE_INTEGER }, known, o.olderThanS))
        out.notes.push(
          `${repo}: branch ${b.branch} kept: it has no reflog, so when it was made is not known (git branch -D it if unwanted)`,
        );
    }
  }
  out.runs.sort((a, b) => b.age_s - a.age_s);
  return out;
}

export interface DiscardOutcome {
  run_id: string;
  discarded: boolean;
  removed: string[];
  /** Why it was left (it changed since it was listed), or what failed. */
  reason: string | null;
}

/**
 * Discards each named run as review/discard does, after checking again that it is still old,
 * unreviewed and not in progress (the list the user confirmed may be minutes old). Its
 * other branches (attempts, baseline) go too; the run is marked discarded.
 */
export async function discardOldRuns(store: RunStore, runIds: readonly string[], o: OldAttemptsOptions): Promise<DiscardOutcome[]> {
  const now = o.now ?? Date.now();
  const inProgress = o.inProgress ?? runningElsewhere;
  const outcomes: DiscardOutcome[] = [];
  for (const id of runIds) {
    const run = store.getRun(id);
    if (!run) {
      outcomes.push({ run_id: id, discarded: false, removed: [], reason: 'the store does not know this run' });
      continue;
    }
    const v = judgeOldRun(run, now, o.olderThanS, inProgress(run));
    if (!v.old) {
      outcomes.push({ run_id: id, discarded: false, removed: [], reason: `left: ${v.why}` });
      continue;
    }
    try {
      const refs = await readRepo(run.repo);
      const wts = runWorktrees(refs, id);
      if (wts.heldBy) {
        outcomes.push({ run_id: id, discarded: false, removed: [], reason: `left: a worktree of it is ${wts.heldBy}` });
        continue;
      }
      const winner = run.winner_attempt === null ? null : winnerBranchName(id, run.winner_attempt);
      const removed = await discardRun(run.repo, id, winner);
      // Branches of the run without a worktree (an attempt's kept after a crash): discardRun names only the winner's.
      const left = (await readRepo(run.repo)).branches.filter((b) => branchOfRun(b.branch, id));
      for (const b of left) {
        await runGit(repoTarget(await locateRepository(run.repo)), ['branch', '-D', '--end-of-options', b.branch]);
        removed.push(`branch ${b.branch}`);
      }
      store.setReview(id, 'discarded');
      outcomes.push({ run_id: id, discarded: true, removed, reason: null });
    } catch (e) {
      outcomes.push({ run_id: id, discarded: false, removed: [], reason: (e as Error).message.split('\n')[0] ?? 'failed' });
    }
  }
  return outcomes;
}

/** Deletes the orphan branches found again now (one that stopped being an orphan since it was listed stays). */
export async function removeOrphanBranches(store: RunStore, orphans: readonly OrphanBranch[], o: OldAttemptsOptions): Promise<string[]> {
  const removed: string[] = [];
  const repos = [...new Set(orphans.map((x) => x.repo))];
  const again = await findOldAttempts(store, { ...o, repos });
  for (const x of orphans) {
    if (!again.orphans.some((y) => y.repo === x.repo && y.branch === x.branch)) continue;
    await runGit(repoTarget(await locateRepository(x.repo)), ['branch', '-D', '--end-of-options', x.branch]);
    removed.push(`${x.repo}: branch ${x.branch}`);
  }
  return removed;
}
