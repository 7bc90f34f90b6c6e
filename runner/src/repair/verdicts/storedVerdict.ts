import type { Verdict } from './judgeTestRun.js';

const OLDER = 'it was recorded by an older runner, which did not say';

/**
 * A verdict read back from the store. Runs recorded before failing lists were judged whole or
 * not (issue 26) lack those fields; they are filled in as unknown, so an old run still shows.
 */
export function storedVerdict(json: string): Verdict {
  const v = JSON.parse(json) as Partial<Verdict> &
    Omit<
      Verdict,
      | 'failing_complete'
      | 'failing_incomplete'
      | 'new_failing'
      | 'regressions_unknown'
      | 'fixed'
      | 'failing_before'
      | 'issue_tests'
      | 'provisional'
    >;
  return {
    ...v,
    failing_complete: v.failing_complete ?? false,
    failing_incomplete: v.failing_incomplete !== undefined ? v.failing_incomplete : v.failing_complete ? null : OLDER,
    new_failing: v.new_failing ?? [],
    could_not_run: v.could_not_run ?? null,
    reused_from: v.reused_from ?? null,
    targeted: v.targeted ?? null,
    egress_denied: v.egress_denied ?? [],
    fixed: v.fixed ?? [],
    failing_before: v.failing_before ?? [],
    issue_tests: v.issue_tests ?? [],
    provisional: v.provisional ?? false,
    regressions_unknown: v.regressions_unknown !== undefined ? v.regressions_unknown : v.regressions_known ? null : OLDER,
  };
}
