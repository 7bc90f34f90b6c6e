import { failingOf } from '../verdicts/failingSet.js';
import { heldToIssueTests, type IssueTests, issueTestsOf } from '../verdicts/issueTests.js';
import { someNames } from '../verdicts/someNames.js';
import type { AttemptResult, RunScope } from './fixRun.js';
import type { Baseline } from './runBaseline.js';

/**
 * Phase 3b: once every attempt is judged, the run's issue tests (issueTests.ts) and every
 * verdict held to them. An attempt green on the tests it made pass itself is red when another
 * attempt made one more of the issue's failing tests pass; the store is told, and so is the user.
 * An attempt said "green so far" while the others ran is said again, green or red, so no
 * progress view is left showing the provisional word.
 */
export function holdToIssueTests({ run, deps }: RunScope, baseline: Baseline, results: AttemptResult[]): IssueTests {
  const before = [...failingOf(baseline.report)];
  const judged = results.flatMap((r) => (r.verdict && !r.verdict.could_not_run ? [r.verdict] : []));
  const issue = issueTestsOf(baseline.judged.rule ?? { strict: false, named: [] }, before, judged);
  if (before.length > 0 && issue.rule !== 'whole suite (--strict)')
    deps.progress(`issue tests: ${someNames(issue.tests)} (${issue.rule}); a fix must make them pass and break nothing that passed`);
  for (const r of results) {
    if (!r.verdict) continue;
    const held = heldToIssueTests(r.verdict, issue);
    if (held.green !== r.verdict.green) {
      const left = issue.tests.filter((n) => !r.verdict!.fixed.includes(n));
      deps.progress(
        `attempt ${r.index}: red after all, it leaves the issue's test(s) ${someNames(left)} failing, which another attempt made pass`,
      );
    } else if (r.verdict.provisional && held.green) {
      deps.progress(
        `attempt ${r.index}: green, held to the run's issue tests; still failing as on the base commit, not the issue's: ${someNames(held.failing_before)}`,
      );
    }
    r.verdict = held;
    deps.store.setAttemptVerdict(run.runId, r.index, held);
  }
  return issue;
}
