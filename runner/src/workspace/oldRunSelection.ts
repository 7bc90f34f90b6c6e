import { InputError } from '../protocol/inputError.js';
import { BRANCH_PREFIX } from './attemptWorktree.js';

/**
 * Pure: which runs' attempts are old enough to offer for removal (`gc --older-than`, the
 * editor's Discard Old Attempts) and which forge/attempt/* branches belong to no run the
 * store knows. No I/O here: oldAttempts.ts looks at the repositories and removes.
 */

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
/** Ten years: anything longer is a typo, not a retention. */
export const MAX_AGE_S = 3650 * 86_400;

/** "3d", "12h", "90m", "1.5d", "2w", "45s" -> seconds; anything else is an InputError naming the fix. */
export function parseDuration(text: string, flag = '--older-than'): number {
  const m = /^(\d{1,9}(?:\.\d{1,6})?)([smhdw])$/.exec(text.trim());
  const seconds = m ? Number(m[1]) * UNIT_SECONDS[m[2]!]! : NaN;
  if (!m || !(seconds > 0) || seconds > MAX_AGE_S)
    throw new InputError(
      `${flag} ${JSON.stringify(text)}: expected a positive duration up to 3650d with a unit s, m, h, d or w (e.g. 3d, 12h, 90m)`,
    );
  return seconds;
}

/** What the decision needs of a stored run (RunRow has all of it). */
export interface RunFacts {
  id: string;
  status: string;
  review: 'pending' | 'applied' | 'discarded' | null;
  created_at: string;
  updated_at: string;
}

export type OldRunVerdict = { old: true; age_s: number } | { old: false; why: 'in progress' | 'reviewed' | 'recent' | 'no date' };

/**
 * A run is old and unreviewed when its last change (it ended, was resumed, was reviewed) is
 * more than `olderThanS` ago and nobody applied or discarded it. A run in progress is never
 * old, however long it has run: its worktrees are in use.
 */
export function judgeOldRun(run: RunFacts, nowMs: number, olderThanS: number, inProgress: boolean): OldRunVerdict {
  if (inProgress) return { old: false, why: 'in progress' };
  if (run.review === 'applied' || run.review === 'discarded') return { old: false, why: 'reviewed' };
  const last = Date.parse(run.updated_at || run.created_at);
  if (!Number.isFinite(last)) return { old: false, why: 'no date' };
  const age_s = Math.max(0, Math.floor((nowMs - last) / 1000));
  return (nowMs - last) / 1000 > olderThanS ? { old: true, age_s } : { old: false, why: 'recent' };
}

/** The old unreviewed runs among `runs`, oldest first. */
export function selectOldRuns<R extends RunFacts>(
  runs: readonly R[],
  nowMs: number,
  olderThanS: number,
  inProgress: (run: R) => boolean,
): { run: R; age_s: number }[] {
  const out: { run: R; age_s: number }[] = [];
  for (const run of runs) {
    const v = judgeOldRun(run, nowMs, olderThanS, inProgress(run));
    if (v.old) out.push({ run, age_s: v.age_s });
  }
  return out.sort((a, b) => b.age_s - a.age_s);
}

/** Whether `branch` (short name, e.g. forge/attempt/run-x-a1) is one of run `runId`'s: its attempts, baseline, deps. */
export function branchOfRun(branch: string, runId: string): boolean {
  return branch.startsWith(`${BRANCH_PREFIX}${runId}-`);
}

/** Whether a worktree directory name (under the attempts directory) is one of run `runId`'s. */
export function worktreeOfRun(name: string, runId: string): boolean {
  return name.startsWith(`${runId}-`);
}

export interface BranchFacts {
  branch: string;
  /**
   * Seconds since the branch was made or last moved: the younger of its reflog's creation time
   * and its tip's commit date (a branch made now at an old commit is new). Null when it has no
   * reflog: its age is not known, so it is never an orphan to remove.
   */
  age_s: number | null;
  /** Checked out in some worktree: then it is a run's in use, or a crash leftover for plain gc, never an orphan here. */
  checkedOut: boolean;
}

/**
 * A forge/attempt/* branch is an orphan when no run the store knows owns it, no worktree has it
 * checked out, and its tip is older than the threshold: a branch just made may belong to a
 * runner with another store starting a run right now.
 */
export function isOrphanBranch(b: BranchFacts, knownRunIds: ReadonlySet<string>, olderThanS: number): boolean {
  if (!b.branch.startsWith(BRANCH_PREFIX) || b.checkedOut || b.age_s === null || b.age_s <= olderThanS) return false;
  for (const id of knownRunIds) if (branchOfRun(b.branch, id)) return false;
  return true;
}

/** Pure: a branch's facts; its age from its reflog's creation time and its tip (see BranchFacts.age_s). */
export function orphanFacts(
  b: { branch: string; tipTime: number; createdTime: number | null },
  nowMs: number,
  checkedOut: boolean,
): BranchFacts {
  if (b.createdTime === null) return { branch: b.branch, age_s: null, checkedOut };
  return { branch: b.branch, age_s: Math.max(0, Math.floor((nowMs - Math.max(b.createdTime, b.tipTime)) / 1000)), checkedOut };
}

/** "3d 4h", "5h 12m", "40m", "20s": an age as the user reads it. */
export function formatAge(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return `${m}m`;
  return `${Math.floor(seconds)}s`;
}
