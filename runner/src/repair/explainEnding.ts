import type { FixReport } from '../protocol/fixReport.js';
import { plain } from './verdicts/testReport.js';
import type { Verdict } from './verdicts/judgeTestRun.js';
import { deniedEgressLine } from './verdicts/deniedEgress.js';
import { plural } from './verdicts/failingFirst.js';

const names = (list: readonly string[], n = 3) =>
  `${list
    .slice(0, n)
    .map((t) => `"${t}"`)
    .join(', ')}${list.length > n ? ` and ${list.length - n} more` : ''}`;

/**
 * Pure: why an attempt is not green, in words (null when it is): the tests could not run,
 * the tests it broke, the failing tests it did not fix, or what the runner could not see.
 * Every ending of a run is said from these, never a bare count.
 */
export function attemptReason(v: Verdict | null, error: string | null): string | null {
  if (error) return error === 'cancelled' ? 'cancelled' : `it failed: ${error}`;
  if (!v) return 'it did not finish';
  if (v.green) return null;
  // What the proxy refused the tests is often why they failed: said after the reason, with the way out.
  const denied = deniedEgressLine(v.egress_denied ?? [], 'its tests');
  const why = redReason(v);
  return denied ? `${why} (${denied})` : why;
}

function redReason(v: Verdict): string {
  if (v.could_not_run) return `its tests could not run: ${v.could_not_run}`;
  if (v.regressions.length > 0) return `it broke ${names(v.regressions)}, which passed before`;
  // Failing before and after is not this change's doing: what still fails of its own is the reason.
  const still = v.failing.filter((n) => !(v.failing_before ?? []).includes(n));
  const shown = still.length > 0 ? still : v.failing;
  if (shown.length > 0) return `${names(shown)} still fail${shown.length === 1 ? 's' : ''}`;
  if (v.failing_incomplete) return v.failing_incomplete;
  return `its test command exited ${v.exit_code}`;
}

/**
 * Pure: the last `n` non-empty lines of a cell's output, quoted on one line and bounded: what
 * a red run said last (a compiler error, a missing module) is most often why it is red.
 */
export function outputEnding(output: string, n = 3, maxChars = 400): string {
  const lines = plain(output)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-n);
  if (lines.length === 0) return '(no output)';
  // Every client of the progress gets it safe for a terminal (OSC and private CSI sequences too).
  // eslint-disable-next-line no-control-regex
  const text = lines.join(' | ').replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `"${text.length > maxChars ? `...${text.slice(-maxChars)}` : text}"`;
}

/**
 * Pure: the run's ending in one sentence, with its reason: which attempt won and how, or why
 * none did, attempt by attempt. A winner of the ranking that failed on a fresh checkout says so
 * (the ranking and the run's state never disagree).
 */
export function runEnding(report: Pick<FixReport, 'status' | 'attempts' | 'winner' | 'best' | 'ground_truth' | 'issue_tests'>): string {
  const idx = (id: string) => Number(id.split('-a').at(-1));
  if (report.status === 'fixed' && report.winner) {
    const v = report.winner.verdict;
    const agree = report.winner.attempts.length > 1 ? ` (${report.winner.attempts.length} attempts made the same change)` : '';
    const before = v.failing_before ?? [];
    // Inferred issue tests are a guess that the ending owns up to: an attempt may have fixed only an unrelated failure.
    const guessed =
      report.issue_tests?.rule === 'made to pass by an attempt'
        ? ` (the issue names no test, so its tests are the ones an attempt made pass; if a test failing before and after is the issue's, write its name in the issue, or ask for the whole suite: --strict, or the forge.strict setting)`
        : '';
    const issue = report.issue_tests?.tests ?? [];
    if (before.length > 0)
      return `fixed: attempt ${idx(report.winner.attempts[0]!)} won${agree}: the issue's ${issue.length === 1 ? 'test passes' : `${issue.length} tests pass`} (${names(issue)}; ${v.passed} passed in all) on a fresh checkout with nothing that passed before failing, ${plural(report.winner.diff_size, 'line')} added or removed; failing before and after, not caused by this change: ${names(before)}${guessed}`;
    return `fixed: attempt ${idx(report.winner.attempts[0]!)} won${agree}: its tests pass (${v.passed} passed) on a fresh checkout with nothing that passed before failing, ${plural(report.winner.diff_size, 'line')} added or removed`;
  }
  const gt = report.ground_truth;
  if (gt && report.best) {
    const who = `attempt ${idx(report.best.attempts[0]!)}`;
    if (!gt.applied)
      return `not fixed: ${who} won the ranking but its diff did not apply to a fresh checkout${gt.conflicts.length ? ` (${gt.conflicts.join(', ')})` : ''}`;
    if (!gt.verdict?.green)
      return `not fixed: ${who} won the ranking but failed on a fresh checkout: ${attemptReason(gt.verdict, gt.verdict ? null : 'its tests gave no verdict') ?? 'red'}`;
  }
  const reasons = report.attempts
    .map((a) => ({ a, why: attemptReason(a.verdict, a.error) }))
    .filter((r) => r.why !== null)
    // An attempt stopped by a token budget may not have got to its fix: said, so a larger budget is the way on.
    .map(
      (r) =>
        `attempt ${r.a.index}: ${r.a.status === 'budget' ? `stopped by ${r.a.stop === 'run_tokens' ? "the run's" : 'its'} token budget, ` : ''}${r.why}`,
    );
  if (report.attempts.length === 0) return 'not fixed: no attempt ran';
  return `not fixed: no attempt passed the tests (${reasons.join('; ')})`;
}
