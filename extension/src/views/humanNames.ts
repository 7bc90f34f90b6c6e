import { localOffsetMinutes, shortTitle, startTimeLabel } from './runTitle.js';

/**
 * Pure: the words the extension shows for things the runner names by id or code word, so that
 * titles, tab names and tooltips read as English ("average() is wrong · 14:05",
 * "ground truth check") instead of "run-20261205-…" or "verdict_targeted". The runner's data
 * stays as it is; ids remain where they are meant for copying (the Forge log, a log's body).
 */

/** A run as a person knows it, for a title or tab: its issue's first line (short) and when it started. */
export function runName(run: { issue_title: string; created_at: string }, now: Date, offsetMinutes: number): string {
  const title = shortTitle(run.issue_title, 50);
  const at = startTimeLabel(run.created_at, now, offsetMinutes);
  if (title && at) return `${title} · ${at}`;
  if (title) return title;
  return at ? `run of ${at}` : 'run';
}

/** A run inside a sentence: its issue's first line in quotes, else "the run of 14:05". */
export function runInWords(run: { issue_title: string; created_at: string }, now: Date, offsetMinutes: number): string {
  const title = shortTitle(run.issue_title);
  if (title) return `"${title}"`;
  const at = startTimeLabel(run.created_at, now, offsetMinutes);
  return at ? `the run of ${at}` : 'the run';
}

/** runName at this machine's clock and time zone. */
export function runNameNow(run: { issue_title: string; created_at: string }): string {
  return runName(run, new Date(), localOffsetMinutes(run.created_at));
}

/** runInWords at this machine's clock and time zone. */
export function runInWordsNow(run: { issue_title: string; created_at: string }): string {
  return runInWords(run, new Date(), localOffsetMinutes(run.created_at));
}

/** What each kind of cell is for (the runner's purpose words, runner/src/repair/fix). */
const PURPOSES: Readonly<Record<string, string>> = {
  install: 'dependency install',
  baseline: 'baseline tests',
  baseline_targeted: 'baseline, targeted tests',
  verdict: 'verdict tests',
  verdict_targeted: 'targeted tests',
  ground_truth: 'ground truth check',
  ground_truth_targeted: 'ground truth check, targeted tests',
  run_tests: "agent's test run",
  run_command: "agent's command",
};

/** The runner's suffixes on a purpose (a re-run and why), outermost last. */
const SUFFIXES: readonly (readonly [string, string])[] = [
  ['_stopped', 'stopped'],
  ['_retry', 'retry'],
  ['_uncached', 'without cache'],
  ['_without_hooks', 'without hooks'],
];

/**
 * "verdict_targeted_uncached" -> "targeted tests (without cache)"; an unknown purpose reads
 * with spaces for underscores (a newer runner may add one).
 */
export function cellPurposeWords(purpose: string): string {
  let rest = purpose;
  const notes: string[] = [];
  for (let found = true; found;) {
    found = false;
    for (const [suffix, words] of SUFFIXES) {
      if (rest.length > suffix.length && rest.endsWith(suffix)) {
        rest = rest.slice(0, -suffix.length);
        notes.unshift(words);
        found = true;
      }
    }
  }
  const base = Object.hasOwn(PURPOSES, rest) ? PURPOSES[rest]! : rest.replace(/_+/g, ' ').trim();
  return notes.length > 0 ? `${base} (${notes.join(', ')})` : base;
}

/** A cell log's tab name, "targeted tests, attempt 2" (its id is in the log's first line, for copying). */
export function cellLogName(cell: { purpose: string; attempt_index: number | null }): string {
  return `${cellPurposeWords(cell.purpose)}${cell.attempt_index === null ? '' : `, attempt ${cell.attempt_index}`}`;
}

/**
 * A Cells view row with its purpose in words: the row is built from the runner's purpose (which
 * its colour and icon depend on); only the words shown change.
 */
export function labelInWords<V extends { label: string }>(view: V, purpose: string): V {
  return view.label.startsWith(purpose) ? { ...view, label: `${cellPurposeWords(purpose)}${view.label.slice(purpose.length)}` } : view;
}
