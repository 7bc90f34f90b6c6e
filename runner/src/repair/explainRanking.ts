import type { PatchBytes } from '../workspace/patchBytes.js';
import { selectWinner } from './selectWinner.js';
import type { Verdict } from './verdicts/judgeTestRun.js';
import { plural } from './verdicts/failingFirst.js';

export interface RankedAttempt {
  index: number;
  attemptId: string;
  /** Null when the attempt did not finish (no verdict to rank it by). */
  verdict: Verdict | null;
  patch: PatchBytes;
}

export interface RankingExplained {
  /** Per attempt index: the other attempts that made the identical (normalized) change. */
  agreesWith: Map<number, number[]>;
  /** Per attempt index: 1-based place of its change in the ranking; absent when not ranked. */
  rank: Map<number, number>;
  /** The ranking in words, with the numbers: the rule, then each distinct change best first. */
  lines: string[];
}

/**
 * Pure: why the attempts rank as they do, in the order selectWinner ranks them (green first,
 * which means no regressions; then the smaller diff; then more attempts agreeing; then attempt
 * order). Attempts that made the same change are one candidate and say so.
 */
export function explainRanking(attempts: RankedAttempt[]): RankingExplained {
  const judged = attempts.filter((a): a is RankedAttempt & { verdict: Verdict } => a.verdict !== null);
  const byId = new Map(attempts.map((a) => [a.attemptId, a.index]));
  const selection = selectWinner(judged.map((a) => ({ attemptId: a.attemptId, index: a.index, verdict: a.verdict, patch: a.patch })));
  const agreesWith = new Map<number, number[]>();
  const rank = new Map<number, number>();
  const lines: string[] = [];
  if (selection.ranked.length > 0) {
    lines.push(
      'Ranked: green first (tests pass, nothing that passed before fails), then the smaller diff, then more attempts agreeing, then attempt order.',
    );
  }
  // An attempt whose test runner died before reporting has no verdict on its change: it is
  // said apart, with its cause, never placed among the failing ones.
  const couldNotRun = selection.ranked.filter((g) => g.verdict.could_not_run);
  selection.ranked
    .filter((g) => !g.verdict.could_not_run)
    .forEach((group, i) => {
      const members = group.attempts.map((id) => byId.get(id)!).sort((a, b) => a - b);
      for (const m of members) {
        agreesWith.set(
          m,
          members.filter((o) => o !== m),
        );
        rank.set(m, i + 1);
      }
      const who =
        members.length === 1 ? `attempt ${members[0]}` : `attempts ${members.join(', ')} (${members.length} agree: the same change)`;
      const v = group.verdict;
      const tests = v.green
        ? `green (${v.passed} passed)`
        : `red (${v.failed} failing${v.regressions.length > 0 ? `, ${v.regressions.length} regression(s)` : ''})`;
      const lead = i === 0 && selection.winner ? 'won' : `#${i + 1}`;
      lines.push(`${lead}: ${who}: ${tests}, ${plural(group.size, 'line')} added or removed.`);
    });
  for (const group of couldNotRun) {
    const members = group.attempts.map((id) => byId.get(id)!).sort((a, b) => a - b);
    lines.push(
      `Not ranked: attempt${members.length === 1 ? '' : 's'} ${members.join(', ')}: the tests could not run (${group.verdict.could_not_run}).`,
    );
  }
  if (selection.empty.length > 0) {
    const idx = selection.empty.map((id) => byId.get(id)!).sort((a, b) => a - b);
    lines.push(`Not ranked: attempt${idx.length === 1 ? '' : 's'} ${idx.join(', ')} changed nothing.`);
  }
  const unfinished = attempts.filter((a) => a.verdict === null).map((a) => a.index);
  if (unfinished.length > 0)
    lines.push(`Not ranked: attempt${unfinished.length === 1 ? '' : 's'} ${unfinished.join(', ')} did not finish.`);
  return { agreesWith, rank, lines };
}
