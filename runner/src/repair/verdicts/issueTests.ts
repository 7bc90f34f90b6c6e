import { baselineFailuresUnseen, failingOf, type FixRule, type Judged, type Regressions } from './failingSet.js';
import type { TestReport } from './testReport.js';

export type { FixRule };

/*
 * A fix is a fix when the issue's failing tests pass and nothing else breaks (SWE-bench's
 * FAIL_TO_PASS and PASS_TO_PASS). From the baseline: F, the tests failing on the base commit,
 * and P, the rest. The issue's tests are the tests of F the issue names and every test of F
 * that some attempt makes pass. (What this cannot tell: when the issue names none and every
 * attempt makes only an unrelated failing test pass, that test is taken for the issue's; the
 * ending says the rule, and --strict or naming the tests in the issue closes it.) A test of F that is not the issue's and
 * fails before and after is not caused by the change and does not stop a fix. `--strict` keeps
 * the whole-suite rule: every test passes.
 */

/** Which tests a run held its attempts to, and by which rule (report.json's issue_tests). */
export interface IssueTests {
  tests: string[];
  /** named in the issue: those it names and those an attempt made pass; made to pass by an attempt: it names none. */
  rule: 'named in the issue' | 'made to pass by an attempt' | 'whole suite (--strict)' | 'none passed';
}

/**
 * The last part of a test's name, as an issue would write it: pytest's `a.py::Class::test_x`,
 * unittest's `test_x (pkg.Class.test_x)` or `pkg.Class.test_x`, jest's `suite › case`, go's
 * `TestX/sub`.
 */
function shortName(name: string): string {
  const unittest = /^(\S+) \([\w.]+\)$/.exec(name);
  if (unittest) return unittest[1]!;
  const parts = name.split(/::| › | > |#/);
  const last = parts[parts.length - 1]!.trim();
  // A dotted or slashed path's last identifier (pkg.Class.test_x, TestX/sub): only when it is one.
  const tail = /(?:^|[./])([A-Za-z_][\w-]*)$/.exec(last);
  return /^[\w./-]+$/.test(last) && tail ? tail[1]! : last;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A name an issue quotes stands alone: not the start of a longer test name (`test_mean` in `test_mean_of_three`). */
const alone = (name: string) => new RegExp(`(?<![\\w.-])${escape(name)}(?![\\w./:-]*\\w)`);

/**
 * Pure: the tests of `failing` (the baseline's) that the issue's text names: by their whole
 * name, or by their last part when that part is a test's identifier (`test_mean`, `TestAdd`:
 * "test" in it, or an underscore), each as a word of its own. A subtest's or a case's last
 * part in prose ("empty", "works") names nothing: an issue's words are not test names.
 */
export function testsNamedByIssue(issue: string, failing: readonly string[]): string[] {
  return failing.filter((name) => {
    if (name.length >= 4 && alone(name).test(issue)) return true;
    const short = shortName(name);
    if (short.length < 4 || short === name || !(/test/i.test(short) || short.includes('_'))) return false;
    return alone(short).test(issue);
  });
}

/** What a verdict holds for the F/P rule: which of the baseline's failing tests pass now, which still fail. */
export interface FixFacts {
  green: boolean;
  /** Tests of F this run shows passing. */
  fixed: string[];
  /** Tests of F that fail in this run too, and are not the issue's (not caused by this change). */
  failing_before: string[];
  /** The issue's tests this verdict was held to (the run's rule may widen them at selection). */
  issue_tests: string[];
  /**
   * Green on the tests it made pass itself while others of the baseline's still fail, under the
   * rule that takes the issue's tests from what the attempts made pass: until every attempt is
   * judged (heldToIssueTests), another attempt making one of those pass can still turn it red.
   */
  provisional: boolean;
}

/**
 * Pure: the run's final issue tests, from the rule and every judged attempt's verdict: the
 * named ones, else the union of the tests each attempt made pass (an attempt that leaves one of
 * them failing did not do what another showed can be done).
 */
export function issueTestsOf(rule: FixRule, baselineFailing: readonly string[], verdicts: readonly FixFacts[]): IssueTests {
  if (rule.strict) return { tests: [...baselineFailing], rule: 'whole suite (--strict)' };
  // The named ones and every one an attempt made pass: an issue that mentions a test in passing
  // ("test_x fails too, unrelated") does not excuse the tests another attempt showed can pass.
  const made = new Set([...rule.named, ...verdicts.flatMap((v) => v.fixed)]);
  const tests = baselineFailing.filter((n) => made.has(n));
  if (rule.named.length > 0) return { tests, rule: 'named in the issue' };
  return tests.length > 0 ? { tests, rule: 'made to pass by an attempt' } : { tests: [...baselineFailing], rule: 'none passed' };
}

/**
 * Pure: a verdict held to the run's issue tests. A verdict green on the tests it fixed itself
 * is not green when it leaves one of the run's issue tests failing; that test is then no longer
 * "failing before and after" for it but a test it still fails.
 */
export function heldToIssueTests<V extends FixFacts>(verdict: V, issue: IssueTests): V {
  const wanted = new Set(issue.tests);
  const stillFailing = verdict.failing_before.filter((n) => wanted.has(n));
  const missing = issue.tests.filter((n) => !verdict.fixed.includes(n));
  if (stillFailing.length === 0 && (!verdict.green || missing.length === 0))
    return { ...verdict, issue_tests: issue.tests, provisional: false };
  return {
    ...verdict,
    provisional: false,
    green: verdict.green && missing.length === 0,
    failing_before: verdict.failing_before.filter((n) => !wanted.has(n)),
    issue_tests: issue.tests,
  };
}

/**
 * Pure: one run against the baseline under the rule. `wholeSuiteGreen`: the run is green by
 * the whole-suite rule (exit 0, nothing failing, every baseline failure shown passing). Else,
 * unless --strict, it is green when both failing lists are whole, nothing that passed before
 * fails (no regression, no new failing test), everything failing now failed before, and the
 * issue's tests (named, or else the ones it made pass: at least one) are shown passing.
 */
export function judgeFix(now: Judged, baseline: Judged, found: Regressions, wholeSuiteGreen: boolean): FixFacts {
  const rule = baseline.rule ?? { strict: false, named: [] };
  const before = [...failingOf(baseline.report)];
  const failingNow = failingOf(now.report);
  const shownPassing = (n: string) =>
    now.report?.tests.get(n) === 'pass' ||
    (!now.report?.tests.has(n) && now.completeness.complete && baselineFailuresUnseen(now.report, baseline, [n]) === null);
  const fixed = before.filter((n) => !failingNow.has(n) && shownPassing(n));
  const issue = rule.strict ? before : rule.named.length > 0 ? rule.named : fixed;
  const failingBefore = before.filter((n) => failingNow.has(n) && !issue.includes(n));
  if (wholeSuiteGreen || rule.strict)
    return { green: wholeSuiteGreen, fixed, failing_before: failingBefore, issue_tests: issue, provisional: false };
  const green =
    baseline.completeness.complete &&
    now.completeness.complete &&
    failuresAddUp(baseline.report) &&
    failuresAddUp(now.report) &&
    found.known &&
    found.regressions.length === 0 &&
    !now.report?.cutShort &&
    [...failingNow].every((n) => failingBefore.includes(n)) &&
    issue.length > 0 &&
    issue.every((n) => fixed.includes(n)) &&
    baselineFailuresUnseen(now.report, baseline, issue) === null;
  // Named tests (or --strict) fix the issue's tests now; else they are known only at the run's end.
  const provisional = green && rule.named.length === 0 && failingBefore.length > 0;
  return { green, fixed, failing_before: failingBefore, issue_tests: issue, provisional };
}

/**
 * A run's named failures are as many as it counted: a console that names more failures than
 * its totals (a conftest printing "FAILED x" for a test that passed) would move a passing test
 * into F, where breaking it is excused. Such a run is held to the whole suite (red team).
 */
function failuresAddUp(r: TestReport | null): boolean {
  if (!r) return true;
  let named = 0;
  for (const o of r.tests.values()) if (o === 'fail') named++;
  return named === r.failed;
}
