import { createHash } from 'node:crypto';
import { type PatchBytes, patchStructure } from '../workspace/patchBytes.js';
import type { Verdict } from './verdicts/judgeTestRun.js';

export interface Candidate {
  attemptId: string;
  /** Attempt order (0 = the temperature-0 attempt); breaks ties deterministically. */
  index: number;
  verdict: Verdict;
  patch: PatchBytes;
}

export interface CandidateGroup {
  key: string;
  /** Attempts that produced this same normalized diff, in attempt order. */
  attempts: string[];
  agreement: number;
  /** Changed lines (+/-), headers excluded. */
  size: number;
  verdict: Verdict;
  patch: PatchBytes;
}

export interface Selection {
  /** The green winner; null when no attempt is green. */
  winner: CandidateGroup | null;
  /** When nothing is green: the closest attempt (judged on the whole suite first, fewest failures, then smallest diff). */
  best: CandidateGroup | null;
  /** All distinct non-empty candidates, best first. */
  ranked: CandidateGroup[];
  /** Attempts that changed nothing. */
  empty: string[];
}

/** Pure: a diff without what differs between identical edits (blob ids, trailing blanks). */
export function normalizePatch(patch: PatchBytes | string): string {
  return patchStructure(patch)
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .filter((l) => !/^index [0-9a-f]+\.\.[0-9a-f]+/.test(l) && !/^similarity index /.test(l))
    .map((l) => l.replace(/[ \t]+$/, ''))
    .join('\n')
    .trim();
}

export function patchSize(patch: PatchBytes | string): number {
  const { added, removed } = patchLines(patch);
  return added + removed;
}

/** Pure: the lines a patch adds and removes (an edited line is one of each, as `git diff --stat` counts). */
export function patchLines(patch: PatchBytes | string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of patchStructure(patch).split('\n')) {
    if (l.startsWith('+') && !l.startsWith('+++')) added++;
    else if (l.startsWith('-') && !l.startsWith('---')) removed++;
  }
  return { added, removed };
}

/**
 * Pure: green (exit 0, no regressions) first, then the smallest diff, then the most
 * attempts agreeing on it, then attempt order. Identical normalized diffs are one candidate.
 */
export function selectWinner(candidates: Candidate[]): Selection {
  const byKey = new Map<string, CandidateGroup & { firstIndex: number }>();
  const empty: string[] = [];
  for (const c of [...candidates].sort((a, b) => a.index - b.index)) {
    const normalized = normalizePatch(c.patch);
    if (normalized === '') {
      empty.push(c.attemptId);
      continue;
    }
    const key = createHash('sha256').update(normalized, 'latin1').digest('hex');
    const group = byKey.get(key);
    if (group) {
      group.attempts.push(c.attemptId);
      group.agreement++;
      // A group is green when any of its runs was: the diff is the same, the tests were not flaky-free.
      if (c.verdict.green && !group.verdict.green) group.verdict = c.verdict;
    } else {
      byKey.set(key, {
        key,
        attempts: [c.attemptId],
        agreement: 1,
        size: patchSize(normalized),
        verdict: c.verdict,
        patch: c.patch,
        firstIndex: c.index,
      });
    }
  }
  const groups = [...byKey.values()];
  const ranked = groups
    .sort(
      (a, b) =>
        Number(b.verdict.green) - Number(a.verdict.green) ||
        // A change whose tests could not run is no candidate of failing tests: after every judged one.
        Number(Boolean(a.verdict.could_not_run)) - Number(Boolean(b.verdict.could_not_run)) ||
        a.size - b.size ||
        b.agreement - a.agreement ||
        a.firstIndex - b.firstIndex,
    )
    .map(({ firstIndex: _first, ...g }) => g);
  const winner = ranked[0]?.verdict.green ? ranked[0] : null;
  const judged = ranked.filter((g) => !g.verdict.could_not_run);
  // A targeted verdict counts only the baseline's failing tests (failingFirst.ts): its other
  // failures are not known, so it is never closer than an attempt the whole suite judged.
  const best = winner
    ? null
    : ([...judged].sort(
        (a, b) =>
          Number(Boolean(a.verdict.targeted)) - Number(Boolean(b.verdict.targeted)) ||
          a.verdict.failed - b.verdict.failed ||
          a.size - b.size,
      )[0] ?? null);
  return { winner, best, ranked, empty };
}
