import assert from 'node:assert/strict';
import { heldToIssueTests, issueTestsOf, testsNamedByIssue, type FixRule } from '../../../runner/src/repair/verdicts/issueTests.js';
import { judgedBaseline, judgeTestRun, type Verdict } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';
import { renderSummary } from '../../../runner/src/repair/renderSummary.js';
import { runEnding } from '../../../runner/src/repair/explainEnding.js';
import type { FixReport } from '../../../runner/src/protocol/fixReport.js';

/** pytest -rA output: every test named with its outcome, then the totals line. */
function pytest(outcomes: Record<string, 'PASSED' | 'FAILED' | 'SKIPPED'>): { exit: number; out: string } {
  const names = Object.entries(outcomes);
  const count = (o: string) => names.filter(([, v]) => v === o).length;
  const failed = count('FAILED');
  const lines = names.map(([n, o]) => `${o} tests/test_lib.py::${n}`);
  const totals = [
    failed && `${failed} failed`,
    count('PASSED') && `${count('PASSED')} passed`,
    count('SKIPPED') && `${count('SKIPPED')} skipped`,
  ]
    .filter(Boolean)
    .join(', ');
  return { exit: failed ? 1 : 0, out: `=== short test summary info ===\n${lines.join('\n')}\n=== ${totals} in 0.12s ===\n` };
}

const id = (n: string) => `tests/test_lib.py::${n}`;

/** The baseline as runBaseline keeps it, with the run's rule. */
function baselineOf(run: { exit: number; out: string }, rule: FixRule = { strict: false, named: [] }) {
  return judgedBaseline(parseTestOutput(run.out), judgeTestRun(run.exit, run.out, null), rule);
}

const judge = (run: { exit: number; out: string }, base: ReturnType<typeof baselineOf>): Verdict => judgeTestRun(run.exit, run.out, base);

// The shape issue 32 met on a real checkout: test_has_version fails before any change (package
// metadata missing), test_mean is the issue's bug.
const BASE = pytest({ test_has_version: 'FAILED', test_mean: 'FAILED', test_median: 'PASSED', test_mode: 'PASSED' });

describe('a fix is a fix when the issue tests pass and nothing else breaks (F/P)', () => {
  it('a failure that was there before and after does not stop a fix; it is named', () => {
    const v = judge(
      pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }),
      baselineOf(BASE),
    );
    assert.equal(v.green, true);
    assert.deepEqual(v.fixed, [id('test_mean')]);
    assert.deepEqual(v.failing_before, [id('test_has_version')]);
    assert.deepEqual(v.regressions, []);
    assert.equal(v.exit_code, 1, 'the command still exits 1: the rule reads the tests, not the status');
  });

  it('--strict keeps the whole-suite rule', () => {
    const v = judge(
      pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }),
      baselineOf(BASE, { strict: true, named: [] }),
    );
    assert.equal(v.green, false);
  });

  it('a test that passed before and fails now is a regression: red, named', () => {
    const v = judge(
      pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'FAILED', test_mode: 'PASSED' }),
      baselineOf(BASE),
    );
    assert.equal(v.green, false);
    assert.deepEqual(v.regressions, [id('test_median')]);
  });

  it('a new test that fails is a regression too', () => {
    const v = judge(
      pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED', test_new: 'FAILED' }),
      baselineOf(BASE),
    );
    assert.equal(v.green, false);
    assert.deepEqual(v.new_failing, [id('test_new')]);
  });

  it('a test the issue names that still fails is red, whatever else passes', () => {
    const base = baselineOf(BASE, { strict: false, named: [id('test_mean')] });
    const v = judge(pytest({ test_has_version: 'PASSED', test_mean: 'FAILED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    assert.equal(v.green, false);
    assert.deepEqual(v.issue_tests, [id('test_mean')]);
  });

  it('an attempt that makes none of the failing tests pass is not a fix', () => {
    const v = judge(BASE, baselineOf(BASE));
    assert.equal(v.green, false);
    assert.deepEqual(v.fixed, []);
  });

  it('a skipped issue test is not a passing one', () => {
    const base = baselineOf(BASE, { strict: false, named: [id('test_mean')] });
    const v = judge(pytest({ test_has_version: 'FAILED', test_mean: 'SKIPPED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    assert.equal(v.green, false);
  });

  it('a run whose failing list is not whole is held to the whole suite (a crash hides what else failed)', () => {
    const cut = pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' });
    const v = judgeTestRun(cut.exit, cut.out, baselineOf(BASE), null, {
      npmHooks: false,
      end: { timedOut: true, limitsHit: [], logWhole: true },
    });
    assert.equal(v.green, false);
  });

  it('the whole-suite green run is green under every rule', () => {
    const all = pytest({ test_has_version: 'PASSED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' });
    for (const rule of [
      { strict: true, named: [] },
      { strict: false, named: [] },
      { strict: false, named: [id('test_mean')] },
    ])
      assert.equal(judge(all, baselineOf(BASE, rule)).green, true);
  });

  it('several unrelated failures: the issue tests are those some attempt made pass; an attempt that leaves one of them failing is red', () => {
    const base = baselineOf(BASE);
    const a = judge(pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    const b = judge(pytest({ test_has_version: 'PASSED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    assert.equal(a.green, true, 'on its own, a made test_mean pass and broke nothing');
    const issue = issueTestsOf({ strict: false, named: [] }, [id('test_has_version'), id('test_mean')], [a, b]);
    assert.deepEqual(issue, { tests: [id('test_has_version'), id('test_mean')], rule: 'made to pass by an attempt' });
    const heldA = heldToIssueTests(a, issue);
    assert.equal(heldA.green, false, 'b showed test_has_version can be made to pass');
    assert.deepEqual(heldA.failing_before, []);
    assert.equal(heldToIssueTests(b, issue).green, true);
    // When no attempt fixes test_has_version, it stays "failing before and after".
    const only = issueTestsOf({ strict: false, named: [] }, [id('test_has_version'), id('test_mean')], [a]);
    assert.equal(only.rule, 'made to pass by an attempt');
    assert.equal(heldToIssueTests(a, only).green, true);
    assert.deepEqual(heldToIssueTests(a, only).failing_before, [id('test_has_version')]);
  });

  it('a verdict green while others of the baseline still fail is provisional until it is held to the run (issue 31)', () => {
    const base = baselineOf(BASE);
    const partial = judge(pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    const whole = judge(pytest({ test_has_version: 'PASSED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    const red = judge(pytest({ test_has_version: 'FAILED', test_mean: 'FAILED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    assert.equal(partial.provisional, true, 'another attempt may still make test_has_version pass');
    assert.equal(whole.provisional, false, 'it leaves no failing test another attempt could fix');
    assert.equal(red.provisional, false, 'a red verdict is not provisional');
    const issue = issueTestsOf({ strict: false, named: [] }, [id('test_has_version'), id('test_mean')], [partial]);
    assert.equal(heldToIssueTests(partial, issue).provisional, false, 'held to the run, green for good');
    const both = issueTestsOf({ strict: false, named: [] }, [id('test_has_version'), id('test_mean')], [partial, whole]);
    assert.deepEqual([heldToIssueTests(partial, both).green, heldToIssueTests(partial, both).provisional], [false, false]);
    // Named tests (or --strict) are the issue's from the start: nothing another attempt does changes the verdict.
    const named = baselineOf(BASE, { strict: false, named: [id('test_mean')] });
    const byName = judge(pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }), named);
    assert.deepEqual([byName.green, byName.provisional], [true, false]);
  });

  it('an issue that names an unrelated failing test does not excuse the tests an attempt made pass (red team)', () => {
    const base = baselineOf(BASE, { strict: false, named: [id('test_has_version')] });
    const right = judge(pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    const wrong = judge(pytest({ test_has_version: 'PASSED', test_mean: 'FAILED', test_median: 'PASSED', test_mode: 'PASSED' }), base);
    const issue = issueTestsOf(
      { strict: false, named: [id('test_has_version')] },
      [id('test_has_version'), id('test_mean')],
      [right, wrong],
    );
    assert.deepEqual(issue, { tests: [id('test_has_version'), id('test_mean')], rule: 'named in the issue' });
    assert.equal(heldToIssueTests(wrong, issue).green, false, 'it leaves test_mean failing, which another attempt made pass');
  });

  it('a console naming more failures than it counted (a conftest printing FAILED for a passing test) is held to the whole suite (red team)', () => {
    const lying = {
      exit: 1,
      out: BASE.out.replace(
        '=== short test summary info ===\n',
        `=== short test summary info ===\nFAILED ${id('test_median')} - flaky on CI\n`,
      ),
    };
    const base = baselineOf(lying);
    // The attempt fixes test_mean and really breaks test_median, which passed on the base commit.
    const v = judge(pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'FAILED', test_mode: 'PASSED' }), base);
    assert.equal(v.green, false);
  });

  it('a test that passed before and is skipped now is a regression (red team)', () => {
    const v = judge(
      pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'SKIPPED', test_mode: 'PASSED' }),
      baselineOf(BASE),
    );
    assert.equal(v.green, false);
    assert.deepEqual(v.regressions, [id('test_median')]);
    const strictly = judge(
      pytest({ test_has_version: 'PASSED', test_mean: 'PASSED', test_median: 'SKIPPED', test_mode: 'PASSED' }),
      baselineOf(BASE, { strict: true, named: [] }),
    );
    assert.equal(strictly.green, false, 'the whole-suite rule too');
  });

  it('no attempt made any pass: every failing test is the issue`s, nobody is green', () => {
    const base = baselineOf(BASE);
    const red = judge(BASE, base);
    const issue = issueTestsOf({ strict: false, named: [] }, [id('test_has_version'), id('test_mean')], [red]);
    assert.equal(issue.rule, 'none passed');
    assert.equal(heldToIssueTests(red, issue).green, false);
  });

  it('tests the issue names, by whole name or by their last part as a word', () => {
    const failing = [
      id('test_has_version'),
      id('test_mean'),
      'test_x (pkg.mod.T.test_x)',
      'parser › parses empty input',
      'TestAdd/negative',
    ];
    assert.deepEqual(testsNamedByIssue('mean() of [1, 2] is wrong: test_mean fails', failing), [id('test_mean')]);
    assert.deepEqual(testsNamedByIssue('see test_x', failing), ['test_x (pkg.mod.T.test_x)']);
    assert.deepEqual(testsNamedByIssue("'parser › parses empty input' throws", failing), ['parser › parses empty input']);
    assert.deepEqual(testsNamedByIssue('go test -run TestAdd/negative fails', failing), ['TestAdd/negative']);
    // A word inside another word, or prose, names nothing.
    assert.deepEqual(testsNamedByIssue('the test_meaning of this; negatives are wrong', failing), []);
    // A subtest's or a case's last part is a word of prose, not a test's name (red team).
    const go = ['TestMean/empty', 'TestNetwork/basic', 'TestFetch/works', 'stats › works', 'pkg.mod.Class.empty', 'tests/data/empty'];
    assert.deepEqual(testsNamedByIssue('Mean of an empty list is wrong; the rest works. The basic case too.', go), []);
    // A longer test's name is not a shorter one's.
    assert.deepEqual(testsNamedByIssue('tests/test_stats.py::test_mean_of_three fails', [id('test_mean'), id('test_mean_of_three')]), [
      id('test_mean_of_three'),
    ]);
  });

  it('the summary and the ending name what failed before and after, and the issue tests', () => {
    const v = judge(
      pytest({ test_has_version: 'FAILED', test_mean: 'PASSED', test_median: 'PASSED', test_mode: 'PASSED' }),
      baselineOf(BASE),
    );
    const report = {
      run_id: 'r',
      status: 'fixed',
      repo: '/r',
      base_commit: 'a'.repeat(40),
      test_cmd: 'pytest',
      provider: 'host',
      image: '',
      model: 'replay:x',
      baseline: judgeTestRun(BASE.exit, BASE.out, null),
      issue_tests: { tests: [id('test_mean')], rule: 'made to pass by an attempt' },
      environment: null,
      dependencies: [],
      attempts: [],
      winner: { attempts: ['r-a0'], agreement: 1, diff_size: 1, branch: 'forge/attempt/r-a0', verdict: v },
      best: null,
      ground_truth: { applied: true, conflicts: [], verdict: v },
      applied_to: null,
      cells: 4,
      duration_ms: 1000,
    } satisfies FixReport;
    const ending = runEnding(report);
    assert.equal(
      ending,
      'fixed: attempt 0 won: the issue\'s test passes ("tests/test_lib.py::test_mean"; 3 passed in all) on a fresh checkout with nothing that passed before failing, 1 line added or removed; failing before and after, not caused by this change: "tests/test_lib.py::test_has_version" (the issue names no test, so its tests are the ones an attempt made pass; if a test failing before and after is the issue\'s, write its name in the issue, or ask for the whole suite: --strict, or the forge.strict setting)',
    );
    const summary = renderSummary({ ...report, ending });
    assert.match(summary, /Issue tests \(made to pass by an attempt\): tests\/test\\_lib\.py::test\\_mean\./);
    assert.match(summary, /Failing before and after \(not caused by this change\): tests\/test\\_lib\.py::test\\_has\\_version\./);
  });
});
