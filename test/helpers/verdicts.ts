import type { Verdict } from '../../runner/src/repair/verdicts/judgeTestRun.js';

/** A whole verdict for unit tests: pytest, 3 passed, every list whole; `over` changes what a case is about. */
export function aVerdict(green: boolean, over: Partial<Verdict> = {}): Verdict {
  return {
    exit_code: green ? 0 : 1,
    framework: 'pytest',
    passed: 3,
    failed: green ? 0 : 1,
    skipped: 0,
    failing: [],
    failing_complete: true,
    failing_incomplete: null,
    regressions: [],
    new_failing: [],
    regressions_known: true,
    regressions_unknown: null,
    hook_failures: [],
    could_not_run: null,
    reused_from: null,
    egress_denied: [],
    targeted: null,
    fixed: [],
    failing_before: [],
    issue_tests: [],
    provisional: false,
    green,
    ...over,
  };
}
