import { someNames } from './someNames.js';
import type { TestReport } from './testReport.js';

/**
 * Regressions from failing sets: a test that fails after an attempt and did not fail on the
 * base commit is a regression. That needs no framework to list its passing tests (vitest,
 * pytest -q and unittest without -v do not), only two failing lists that are whole; and a
 * list is whole or not by facts of the run, never by what one framework's console looks like.
 */

/** How a test run ended, beside what it printed. */
export interface RunEnd {
  exitCode: number;
  timedOut: boolean;
  /** Cell limits the command hit (memory, pids, output, cpu_time): it was cut short. */
  limitsHit: readonly string[];
  /** The log the parsers read holds every byte the command printed. */
  logWhole: boolean;
  /** A hook after the tests failed and is excused (npm's registry-only posttest): not a test failure. */
  hookExcused?: boolean;
}

export type Completeness = { complete: true } | { complete: false; why: string };

/** A run that exited 0 with nothing the runner reads: the exit status says nothing failed. */
const WHOLE: Completeness = { complete: true };

/** Pure: does the report name every test that failed in this run, and if not, why not (one phrase). */
export function failingListCompleteness(report: TestReport | null, end: RunEnd): Completeness {
  if (end.timedOut) return { complete: false, why: 'the run timed out before its tests finished' };
  if (end.limitsHit.length > 0) return { complete: false, why: `the run was cut short by its ${end.limitsHit.join(' and ')} limit` };
  if (!end.logWhole) return { complete: false, why: 'its log was cut, so failures past the cut are not seen' };
  if (!report)
    return end.exitCode === 0 ? WHOLE : { complete: false, why: `its output has no test report the runner reads (exit ${end.exitCode})` };
  const named = [...report.tests.values()].filter((o) => o === 'fail').length;
  if (named < report.failed)
    return {
      complete: false,
      why: `${report.failed} test(s) failed but its ${report.framework} output names ${named === 0 ? 'none' : `only ${named}`}`,
    };
  if (report.cutShort) return { complete: false, why: report.cutShort };
  if (end.exitCode !== 0 && report.failed === 0 && !end.hookExcused)
    return {
      complete: false,
      why: `it exited ${end.exitCode} with no failing test in its ${report.framework} report, so something the runner does not read failed (a build, a lint, another test runner)`,
    };
  return WHOLE;
}

/** How a run holds attempts to the baseline (issueTests.ts; kept with the baseline: every verdict of the run uses it). */
export interface FixRule {
  /** --strict: the whole suite must pass. */
  strict: boolean;
  /** Tests of the baseline's failing set that the issue names (empty: it names none). */
  named: string[];
}

export interface Judged {
  report: TestReport | null;
  completeness: Completeness;
  /** A baseline's: how attempts are held to it (issueTests.ts); absent: the F/P rule with no test named. */
  rule?: FixRule;
}

export type Regressions =
  { known: true; regressions: string[]; newFailing: string[] } | { known: false; regressions: string[]; why: string };

export const failingOf = (r: TestReport | null) => new Set(r ? [...r.tests].filter(([, o]) => o === 'fail').map(([n]) => n) : []);

/**
 * Pure: the tests that fail now and did not on the base commit. Known when both failing lists
 * are whole; otherwise the ones that are sure anyway (a test the baseline ran and passed, or
 * that is missing from a whole baseline list) and why the rest cannot be said. A regression is
 * also a new failing test when the baseline named every test it ran and not this one.
 */
export function regressionsFrom(now: Judged, baseline: Judged): Regressions {
  const nowFailing = [...failingOf(now.report)];
  const base = baseline.report;
  const baseFailing = failingOf(base);
  const passedBefore = (n: string) => base?.tests.get(n) === 'pass';
  if (baseline.completeness.complete) {
    const regressions = nowFailing.filter((n) => !baseFailing.has(n));
    if (!now.completeness.complete) return { known: false, regressions, why: now.completeness.why };
    const baseNamesAll = base !== null && namesEveryTest(base);
    return { known: true, regressions, newFailing: baseNamesAll ? regressions.filter((n) => !base.tests.has(n)) : [] };
  }
  // The baseline's failing list is not whole, but a test it ran and passed that fails now is a regression all the same.
  const regressions = nowFailing.filter(passedBefore);
  // A run cut short counts what it printed: naming "every test" it counted says nothing of those after the cut.
  if (base !== null && !base.cutShort && base.passed > 0 && namesEveryTest(base) && now.completeness.complete)
    return { known: true, regressions, newFailing: [] };
  return {
    known: false,
    regressions,
    why: `the baseline's failing list is not whole: ${baseline.completeness.why}`,
  };
}

/** Pure: the report names each test it counted (passing, failing and skipped alike). */
export function namesEveryTest(r: TestReport): boolean {
  let pass = 0,
    fail = 0;
  for (const o of r.tests.values()) {
    if (o === 'pass') pass++;
    else if (o === 'fail') fail++;
  }
  return pass >= r.passed && fail >= r.failed;
}

/**
 * Pure: why this run does not show the baseline's failing tests passing, or null. A fix must
 * make them pass, not stop them running or skip them (a change that exits 0 before they run, a
 * runner cut short, a feature check that turns the test into a skip): with no report at all, a
 * report that names them skipped, more skipped tests than on the base commit while they are not
 * named passing, or a report that names every test it ran and not them.
 */
export function baselineFailuresUnseen(
  now: TestReport | null,
  baseline: Judged | null,
  /** Of the baseline's failing tests, those that must be shown passing (default: all). */
  wanted: readonly string[] = [...failingOf(baseline?.report ?? null)],
): string | null {
  if (wanted.length === 0) return null;
  if (now === null)
    return `its output has no test report the runner reads, so the baseline's failing tests (${someNames(wanted)}) are not shown passing`;
  const base = baseline!.report!;
  const skipped = wanted.filter((n) => now.tests.get(n) === 'skip');
  if (skipped.length > 0) return `its failing test(s) ${someNames(skipped)} were skipped, not passed`;
  const notPassing = wanted.filter((n) => now.tests.get(n) !== 'pass');
  if (now.skipped > base.skipped && notPassing.length > 0)
    return `it skipped ${now.skipped - base.skipped} more test(s) than the baseline, and its failing test(s) ${someNames(notPassing)} are not shown passing`;
  // Names are each parser's and not always one shape for a test's pass and its failure
  // (pytest's SUBFAILED, a repeated TAP assertion "x #2"): there a failing test counts as not
  // run only when fewer tests ran than on the base commit. Frameworks that name a test the same
  // whether it passes or fails are held to the name: a run that names every test and not the
  // baseline's failing one did not run it, whatever the counts (a change that exits 0 before
  // it, which node:test reports as its file passing; red team 5).
  const ranNow = now.passed + now.failed;
  const ranBefore = base.passed + base.failed;
  const exact = now.framework.split(' + ').every((f) => EXACT_NAMES.has(f));
  if (!namesEveryTest(now) || (!exact && ranNow >= ranBefore)) return null;
  const ran = (n: string) => now.tests.has(n) || (exact ? fileFailureCleared(now, n, ranNow >= ranBefore) : subtestRan(now, n));
  const gone = wanted.filter((n) => !ran(n));
  if (gone.length === 0) return null;
  return ranNow < ranBefore
    ? `${ranNow} test(s) ran where the baseline ran ${ranBefore}, and its failing test(s) ${someNames(gone)} did not run`
    : `its failing test(s) ${someNames(gone)} did not run: this run names every test it ran, and not them`;
}

/** Frameworks whose console names a test the same way whether it passes or fails. */
const EXACT_NAMES = new Set(['node:test', 'mocha', 'jest', 'vitest', 'ava']);

/**
 * node:test reports a test file that fails before its tests run (a missing export, a syntax
 * error) as one failing test named by the file's path; once it loads, its tests are named by
 * their titles. That failure is gone when this run does not name the file and ran at least as
 * many tests as the baseline (the file's own tests among them).
 */
function fileFailureCleared(now: TestReport, n: string, asMany: boolean): boolean {
  return now.framework.split(' + ').includes('node:test') && /^\/\S+\.[cm]?[jt]sx?$/.test(n) && asMany;
}

/** A subtest's outcome may be named only when it fails: it ran when the test that holds it is named. */
function subtestRan(now: TestReport, n: string): boolean {
  return [...now.tests.keys()].some((t) => n.startsWith(t) && /^(?: |\/|\[|\.|::| › )/.test(n.slice(t.length)));
}
