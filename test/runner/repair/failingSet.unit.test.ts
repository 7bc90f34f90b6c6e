import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FixReport, VerdictSchema } from '../../../runner/src/protocol/fixReport.js';
import { storedVerdict } from '../../../runner/src/repair/verdicts/storedVerdict.js';
import { renderSummary } from '../../../runner/src/repair/renderSummary.js';
import { failingListCompleteness, type Judged, regressionsFrom } from '../../../runner/src/repair/verdicts/failingSet.js';
import { judgedBaseline, judgeTestRun, type Verdict } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { lifecycleStages } from '../../../runner/src/repair/verdicts/npmLifecycle.js';
import { parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';
import { emptyReport, type TestOutcome, type TestReport } from '../../../runner/src/repair/verdicts/testReport.js';

const fixture = (name: string) => readFileSync(join('test', 'fixtures', 'test-output', name), 'utf8');
const WHOLE = { exitCode: 1, timedOut: false, limitsHit: [] as string[], logWhole: true };

function report(framework: string, tests: [string, TestOutcome][], counts?: Partial<TestReport>): TestReport {
  const r = { ...emptyReport(framework), tests: new Map(tests) };
  for (const [, o] of tests) {
    if (o === 'pass') r.passed++;
    else if (o === 'fail') r.failed++;
    else r.skipped++;
  }
  return { ...r, ...counts };
}

/** A baseline as runBaseline keeps it, from its real output. */
const baselineOf = (exitCode: number, output: string): Judged =>
  judgedBaseline(parseTestOutput(output), judgeTestRun(exitCode, output, null));

describe('failing lists: whole or not, by the facts of the run', () => {
  const r = report('vitest', [['a', 'fail']], { passed: 7 });

  it('a run that finished with every failure named is whole, whatever the framework lists of its passing tests', () => {
    assert.deepEqual(failingListCompleteness(r, WHOLE), { complete: true });
    assert.deepEqual(failingListCompleteness(null, { ...WHOLE, exitCode: 0 }), { complete: true });
  });

  it('each reason a list is not whole is said in words', () => {
    const why = (rep: TestReport | null, end: Partial<typeof WHOLE> & { limitsHit?: string[] }) => {
      const c = failingListCompleteness(rep, { ...WHOLE, ...end });
      assert.equal(c.complete, false);
      return c.complete ? '' : c.why;
    };
    assert.match(why(r, { timedOut: true }), /timed out/);
    assert.match(why(r, { limitsHit: ['memory'] }), /cut short by its memory limit/);
    assert.match(why(r, { logWhole: false }), /log was cut/);
    assert.match(why(null, {}), /no test report the runner reads \(exit 1\)/);
    assert.match(why(report('jest', [['a', 'fail']], { failed: 3 }), {}), /3 test\(s\) failed but its jest output names only 1/);
    assert.match(
      why(report('mocha', [], { passed: 4 }), { exitCode: 2 }),
      /exited 2 with no failing test .* something the runner does not read failed/,
    );
  });
});

describe('a TAP run that crashed mid-way (tape without a plan): sure failures, a list not whole', () => {
  const head = '# stringify\nok 1 should be strictly equal\n# formats\nok 2 should be strictly equal\n';
  const crashed = `TAP version 13\n${head}not ok 3 should be strictly equal\n  ---\n  ...\n/x/lib/formats.js:1\n\nTypeError: String.prototype.replace called on null or undefined\n    at replace (<anonymous>)\n`;
  const finished = `TAP version 13\n${head}ok 3 should be strictly equal\n\n1..3\n# tests 3\n# pass  3\n\n# ok\n`;

  it('the failures printed before the crash are named and counted; why the rest is not known says the crash', () => {
    const rep = parseTestOutput(crashed)!;
    assert.equal(rep.framework, 'tap');
    assert.deepEqual([rep.passed, rep.failed], [2, 1]);
    assert.equal(rep.tests.get('formats › should be strictly equal #2'), 'fail');
    const c = failingListCompleteness(rep, WHOLE);
    assert.equal(c.complete, false);
    assert.match(
      c.complete ? '' : c.why,
      /stops after test 3 without a plan \(TypeError: String\.prototype\.replace called on null or undefined\)/,
    );
  });

  it('a test that passed in a whole baseline and failed before the crash is a sure regression', () => {
    const v = judgeTestRun(1, crashed, baselineOf(0, finished));
    assert.deepEqual(v.regressions, ['formats › should be strictly equal #2']);
    assert.equal(v.regressions_known, false);
    assert.match(v.regressions_unknown!, /without a plan/);
  });

  it('a whole TAP run, or output that is no TAP at all, is not read as cut short', () => {
    assert.equal(parseTestOutput(finished)!.cutShort, undefined);
    assert.equal(parseTestOutput('building... ok 1 of 2\nError: tsc failed\n'), null);
  });
});

describe('green needs the tests to pass, not only the command to exit 0 (red team, issue 26)', () => {
  const base = `TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\nok 3 - adds negatives\n1..3\n# tests 3\n# pass 2\n# fail 1\n`;

  it('a run that exits 0 naming a failing test is red', () => {
    const v = judgeTestRun(0, 'test_x (m.T.test_x) ... FAIL\n\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n', null);
    assert.equal(v.green, false);
  });

  it('the baseline’s failing test missing from a run that names every test: not green, and why', () => {
    const v = judgeTestRun(0, 'TAP version 13\nok 1 - /repo/test/calc.test.js\n1..1\n# tests 1\n# pass 1\n# fail 0\n', baselineOf(1, base));
    assert.equal(v.green, false);
    assert.equal(v.failing_complete, false);
    assert.match(v.failing_incomplete!, /1 test\(s\) ran where the baseline ran 3, and its failing test\(s\) subtracts did not run/);
  });

  it('no report at all where the baseline named failing tests: not green', () => {
    const v = judgeTestRun(0, 'bye\n', baselineOf(1, base));
    assert.equal(v.green, false);
    assert.match(
      v.failing_incomplete!,
      /no test report the runner reads, so the baseline's failing tests \(subtracts\) are not shown passing/,
    );
  });

  it('a TAP run cut short that exits 0 is not green; a cut-short baseline does not make regressions known', () => {
    const cut = 'TAP version 13\nok 1 - adds\nok 2 - subtracts\n';
    assert.equal(judgeTestRun(0, cut, baselineOf(1, base)).green, false);
    const after = `TAP version 13\nok 1 - adds\nok 2 - subtracts\nnot ok 3 - adds negatives\n1..3\n# tests 3\n# pass 2\n# fail 1\n`;
    const v = judgeTestRun(1, after, baselineOf(1, cut));
    assert.equal(v.regressions_known, false);
  });

  it('the fix: the baseline’s failing test now passes, named', () => {
    const v = judgeTestRun(
      0,
      `TAP version 13\nok 1 - adds\nok 2 - subtracts\nok 3 - adds negatives\n1..3\n# tests 3\n# pass 3\n# fail 0\n`,
      baselineOf(1, base),
    );
    assert.deepEqual([v.green, v.failing_complete, v.regressions_known], [true, true, true]);
  });
});

describe('shapes found on published packages (issue 26 corpus)', () => {
  it('two tape streams in one test script (object-inspect: npm run tests-only && npm run test:corejs): their totals add up', () => {
    const stream = (n: number) =>
      `TAP version 13\n# inspect\nok 1 should be equal\nok 2 should be equal\n\n1..2\n# tests 2\n# pass  2\n\n# ok\n`.repeat(n);
    const r = parseTestOutput(stream(2))!;
    assert.deepEqual([r.passed, r.failed, r.tests.size], [4, 0, 4]);
  });

  it('AVA 6 (eleventy-navigation): ✔ and ✘ [fail]: lines named, no passed total when a test fails', () => {
    const fail =
      "\n  ✔ empty\n  ✘ [fail]: url override\n  ✔ breadcrumbs\n  ─\n\n  url override\n\n  Difference (- actual, + expected):\n\n  - 'a'\n  + 'b'\n\n  ─\n\n  1 test failed\n";
    const pass = '\n  ✔ empty\n  ✔ url override\n  ✔ breadcrumbs\n  ─\n\n  3 tests passed\n';
    const r = parseTestOutput(fail)!;
    assert.deepEqual([r.framework, r.passed, r.failed, r.tests.get('url override')], ['ava', 2, 1, 'fail']);
    const v = judgeTestRun(
      1,
      fail.replace('✔ breadcrumbs', '✘ [fail]: breadcrumbs').replace('1 test failed', '2 tests failed'),
      baselineOf(1, fail),
    );
    assert.deepEqual(v.regressions, ['breadcrumbs']);
    assert.equal(judgeTestRun(0, pass, baselineOf(1, fail)).green, true);
    assert.equal(parseTestOutput('  ✔ a\n  1 uncaught exception\n  1 test passed\n')!.failed, 1);
  });

  it('AVA 6: a failing line carries the error message after the title; the title comes from the account after the rule, and a diff line is no skipped test', () => {
    const r = parseTestOutput(fixture('ava6-fail-messages.txt'))!;
    assert.deepEqual(Object.fromEntries(r.tests), { asserts: 'fail', throws: 'fail', 'with message': 'fail', passes: 'pass' });
    assert.deepEqual([r.passed, r.failed, r.skipped], [1, 3, 0]);
    // Only `throws` fixed, and it now fails by an assertion (no message): the same test, no regression.
    const now = fixture('ava6-fail-messages.txt').replace('✘ [fail]: throws Error thrown in test', '✘ [fail]: throws');
    const v = judgeTestRun(1, now, baselineOf(1, fixture('ava6-fail-messages.txt')));
    assert.deepEqual([v.regressions, v.regressions_known], [[], true]);
  });

  it('mocha 2 ends a passing title with a space its failing one lacks (jsonpath): one name either way', () => {
    const pass = '\n  slice\n\r    ✓ negative slices \n\r    ✓ explicit params \n\n\n  2 passing (5ms)\n';
    const fail = '\n  slice\n\r    1) negative slices\n\r    ✓ explicit params \n\n\n  1 passing (5ms)\n  1 failing\n';
    assert.deepEqual([...parseTestOutput(pass)!.tests.keys()], ['slice › negative slices', 'slice › explicit params']);
    assert.deepEqual(Object.fromEntries(parseTestOutput(fail)!.tests), {
      'slice › negative slices': 'fail',
      'slice › explicit params': 'pass',
    });
    const v = judgeTestRun(0, pass, baselineOf(1, fail));
    assert.equal(v.green, true, v.failing_incomplete ?? '');
  });
});

describe('tests inside suites: a failing suite does not hide a regression in another of its tests (red team 4, issue 26)', () => {
  // The suite `squash` fails on the base commit (one of its tests does); the attempt breaks another.
  for (const reporter of ['tap', 'spec']) {
    it(`node:test ${reporter}: tests are named with their suites, so the new failure is a regression`, () => {
      const base = baselineOf(1, fixture(`node-test-${reporter}-suite-baseline.txt`));
      assert.equal(base.completeness.complete, true);
      assert.equal(base.report!.tests.get('squash › keeps tabs'), 'fail');
      assert.equal(base.report!.tests.get('squash › ends › trims'), 'pass');
      const v = judgeTestRun(1, fixture(`node-test-${reporter}-suite-broke.txt`), base);
      assert.equal(v.regressions_known, true);
      assert.ok(v.regressions.includes('squash › joins runs of spaces'), JSON.stringify(v.regressions));
      assert.ok(!v.regressions.includes('squash'), 'the suite failed before too');
    });
  }

  it('mocha: the same title in two suites is two tests; a failure is named with its suites from the failure account', () => {
    const base = baselineOf(1, fixture('mocha-same-title-baseline.txt'));
    assert.equal(base.report!.tests.get('parse › reads an empty string'), 'fail');
    // `format` fails now where `parse` did before: same title, another test.
    const v = judgeTestRun(1, fixture('mocha-same-title-broke.txt'), base);
    assert.equal(v.green, false);
    assert.equal(v.regressions_known, true);
    assert.deepEqual(v.regressions, ['format › reads an empty string']);
  });

  it('jest: a failure is named with its suites from its "●" header too, so the same title in two suites is two tests', () => {
    const run = (failing: string, passing: string) =>
      `FAIL src/x.test.js\n  ${passing}\n    ✓ empty (1 ms)\n  ${failing}\n    ✕ empty (2 ms)\n\n  ● ${failing} › empty\n\n    expect(received).toBe(expected)\n\nTest Suites: 1 failed, 1 total\nTests:       1 failed, 1 passed, 2 total\n`;
    const v = judgeTestRun(1, run('format', 'parse'), baselineOf(1, run('parse', 'format')));
    assert.deepEqual([v.regressions_known, v.regressions], [true, ['format › empty']]);
  });

  it('mocha: a line a test prints like a failure ("  1) pads") is no failure unless the failure account after the totals names it', () => {
    const base = parseTestOutput(fixture('mocha-same-title-baseline.txt'))!;
    assert.equal(base.tests.get('format › pads'), 'pass');
    assert.equal([...base.tests.values()].filter((o) => o === 'fail').length, 1, JSON.stringify([...base.tests]));
    // Without an account (a cut log), a number past the failing count is no failure either.
    const noAccount = '\n  a\n    ✔ x\n  2) y\n    1) z\n\n\n  1 passing (3ms)\n  1 failing\n';
    assert.deepEqual(Object.fromEntries(parseTestOutput(noAccount)!.tests), { 'a › x': 'pass', 'a › z': 'fail' });
  });
});

describe('red team 5 (issue 26): real node:test and mocha outputs that were misjudged', () => {
  it('H1: a change that makes the code under test exit 0 is no fix though the counts match: node:test reports the file as a passing test', () => {
    const v = judgeTestRun(0, fixture('node-test-exit0-attempt.txt'), baselineOf(1, fixture('node-test-exit0-baseline.txt')));
    assert.equal(v.green, false);
    assert.match(
      v.failing_incomplete ?? '',
      /its failing test\(s\) cli › exits cleanly.* did not run: this run names every test it ran, and not them/,
    );
  });

  it('H2: a test whose name starts with the name of one that ran ("parses strict" after "parses") did not run for it', () => {
    const v = judgeTestRun(
      0,
      fixture('node-test-exit0-midfile-attempt.txt'),
      baselineOf(1, fixture('node-test-exit0-midfile-baseline.txt')),
    );
    assert.equal(v.green, false);
    assert.match(
      v.failing_incomplete ?? '',
      /1 test\(s\) ran where the baseline ran 3, and its failing test\(s\) parses strict did not run/,
    );
  });

  it('M1: the spec reporter’s recap after its totals ("✖ failing tests:") does not name a passing top-level test of the same title as failing', () => {
    const base = baselineOf(1, fixture('node-test-spec-recap-baseline.txt'));
    assert.equal(base.report!.tests.get('handles empty input'), 'pass');
    const v = judgeTestRun(1, fixture('node-test-spec-recap-attempt.txt'), base);
    assert.deepEqual([v.regressions, v.regressions_known], [['handles empty input'], true]);
  });

  it('M5: a todo test that fails is no failure (spec: "✖ x (2ms) # reason")', () => {
    const r = parseTestOutput(fixture('node-test-spec-todo.txt'))!;
    assert.deepEqual(Object.fromEntries(r.tests), { x: 'skip', y: 'skip', z: 'skip', ok: 'pass' });
    assert.equal(judgeTestRun(0, fixture('node-test-spec-todo.txt'), null).failing.length, 0);
  });

  it('M6: a test that prints another mocha run’s report adds that run’s failure; nothing printed takes one away (red team, issue 26 round 6)', () => {
    // `mocha a; mocha b` prints two reports in a row too: the earlier one's failure must count.
    // A test printing an inner run's report looks the same, so its failure counts as well (red, never a wrong green).
    const base = baselineOf(1, fixture('mocha-inner-report-baseline.txt'));
    // The inner report splits the outer run's list, but each failure is named by its run's own account.
    assert.deepEqual([base.report!.passed, base.report!.failed], [1, 2]);
    assert.deepEqual(
      [...base.report!.tests].filter(([, o]) => o === 'fail').map(([n]) => n),
      ['expected to fail', 'cli › parses args'],
    );
    const fixed = judgeTestRun(0, fixture('mocha-inner-report-fixed.txt'), base);
    assert.deepEqual([fixed.green, fixed.regressions, fixed.failing], [false, [], ['expected to fail']]);
  });

  it('mocha 2 (jsonpath) prints the whole chain on the failure’s first line and its error right under it: both failures named', () => {
    const r = parseTestOutput(fixture('mocha2-tdd-failing.txt'))!;
    assert.deepEqual(Object.fromEntries(r.tests), {
      'parse › throws for bad input': 'fail',
      'parse › ok one': 'pass',
      'other › fails too': 'fail',
    });
    assert.deepEqual(failingListCompleteness(r, WHOLE), { complete: true });
  });

  it('M3: a mocha suite titled with a colon ("config:") keeps its failure named; a failure named twice counts once', () => {
    const base = baselineOf(1, fixture('mocha-colon-suite-baseline.txt'));
    assert.equal(base.report!.tests.get('config: › loads'), 'fail');
    assert.equal(base.completeness.complete, true);
    const v = judgeTestRun(1, fixture('mocha-colon-suite-attempt.txt'), base);
    assert.equal(v.regressions_known, true);
    // Two failures, each named once with its suites: the list is whole only with both named.
    const r = parseTestOutput(fixture('mocha-colon-suite-baseline.txt'))!;
    r.tests.delete('config: › loads');
    assert.match(failingListCompleteness(r, WHOLE).complete ? '' : 'not whole', /not whole/);
  });
});

describe('go test: two packages with a test of the same name (golang-lru)', () => {
  it('each is named with its package, so a failure in one is not hidden by a pass in the other', () => {
    const out =
      '=== RUN   TestLRU\n--- FAIL: TestLRU (0.00s)\nFAIL\tgithub.com/hashicorp/golang-lru\t0.109s\n=== RUN   TestLRU\n--- PASS: TestLRU (0.00s)\n=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\nok  \tgithub.com/hashicorp/golang-lru/simplelru\t0.012s\nFAIL\n';
    const r = parseTestOutput(out)!;
    assert.deepEqual(Object.fromEntries(r.tests), {
      'github.com/hashicorp/golang-lru.TestLRU': 'fail',
      'github.com/hashicorp/golang-lru/simplelru.TestLRU': 'pass',
      TestAdd: 'pass',
    });
    assert.deepEqual([r.passed, r.failed], [2, 1]);
  });
});

describe('regressions from failing sets', () => {
  const whole = (rep: TestReport | null): Judged => ({ report: rep, completeness: { complete: true } });

  it('a test failing now that did not fail in the baseline is a regression; a test the baseline never had is a new failing test', () => {
    const base = whole(
      report('unittest', [
        ['t.a', 'pass'],
        ['t.b', 'fail'],
      ]),
    );
    const now = whole(
      report('unittest', [
        ['t.a', 'fail'],
        ['t.b', 'pass'],
        ['t.c', 'fail'],
      ]),
    );
    assert.deepEqual(regressionsFrom(now, base), { known: true, regressions: ['t.a', 't.c'], newFailing: ['t.c'] });
  });

  it('a baseline that names only its failures still names regressions (and cannot say which are new)', () => {
    const base = whole(report('vitest', [['b', 'fail']], { passed: 9 }));
    const now = whole(report('vitest', [['a', 'fail']], { passed: 9 }));
    assert.deepEqual(regressionsFrom(now, base), { known: true, regressions: ['a'], newFailing: [] });
  });

  it('a run whose list is not whole: the sure regressions, and why the rest is unknown', () => {
    const base = whole(report('jest', [['b', 'fail']], { passed: 3 }));
    const now: Judged = {
      report: report('jest', [['a', 'fail']], { failed: 4 }),
      completeness: { complete: false, why: 'the run timed out before its tests finished' },
    };
    assert.deepEqual(regressionsFrom(now, base), { known: false, regressions: ['a'], why: 'the run timed out before its tests finished' });
    const cut: Judged = { report: report('jest', [['b', 'fail']]), completeness: { complete: false, why: 'its log was cut' } };
    const r = regressionsFrom(whole(report('jest', [['a', 'fail']])), cut);
    assert.deepEqual(r, { known: false, regressions: [], why: "the baseline's failing list is not whole: its log was cut" });
  });
});

describe('real outputs (issue 26)', () => {
  it('npm test = npm run tests-only (pretest lint, tape in the nested script, posttest npx npm audit without a registry): the tests passed, the hook is said', () => {
    const out = fixture('npm-nested-run-posttest-network.txt');
    assert.deepEqual(
      lifecycleStages(out).map((s) => s.name),
      ['pretest', 'test', 'posttest'],
    );
    const v = judgeTestRun(1, out, baselineOf(1, fixture('npm-nested-run-failing.txt')));
    assert.deepEqual([v.green, v.passed, v.failed, v.framework], [true, 2, 0, 'tap']);
    assert.deepEqual(v.hook_failures, [{ hook: 'posttest', command: 'npx npm audit --production', reason: 'network' }]);
    assert.deepEqual([v.regressions, v.regressions_known], [[], true]);
  });

  it('the same project with a test broken: red, the failing assertion named, the hook not excused', () => {
    const v = judgeTestRun(1, fixture('npm-nested-run-failing.txt'), null);
    assert.deepEqual([v.green, v.failing, v.hook_failures, v.failing_complete], [false, ['subs › two minus one'], [], true]);
  });

  it('pnpm 10 (banners with the directory): split by lifecycle names; a posttest failing for its own reason (ENOLOCK) is not excused', () => {
    const out = fixture('pnpm10-nested-run-posttest.txt');
    assert.deepEqual(
      lifecycleStages(out).map((s) => s.name),
      ['pretest', 'test', 'posttest'],
    );
    const v = judgeTestRun(1, out, baselineOf(1, fixture('npm-nested-run-failing.txt')));
    assert.deepEqual([v.green, v.passed, v.failed, v.hook_failures], [false, 2, 0, []]);
    assert.match(v.regressions_unknown!, /exited 1 with no failing test in its tap report/);
  });

  it('yarn 1 prints no script names: the whole output is the report, the failing assertion named', () => {
    const out = fixture('yarn1-nested-run-failing.txt');
    assert.deepEqual(lifecycleStages(out), []);
    const v = judgeTestRun(1, out, null);
    assert.deepEqual([v.green, v.failing, v.failing_complete], [false, ['subs › two minus one'], true]);
  });

  it('yarn 4 (berry) runs no pre/post scripts and prints no banners for a nested `yarn run`: the whole output is the report', () => {
    const fail = fixture('yarn4-nested-run-fail.txt');
    const pass = fixture('yarn4-nested-run-pass.txt');
    assert.deepEqual([lifecycleStages(fail), /PRETEST|POSTTEST/.test(fail + pass)], [[], false]);
    const v = judgeTestRun(1, fail, null);
    assert.deepEqual([v.green, v.failing, v.failing_complete], [false, ['subs'], true]);
    const fixed = judgeTestRun(0, pass, baselineOf(1, fail));
    assert.deepEqual([fixed.green, fixed.passed, fixed.regressions_known], [true, 2, true]);
  });

  it('vitest 3 with node:test TAP in its output: the regression is named, the TAP lines are not vitest tests', () => {
    const base = baselineOf(1, fixture('vitest3-tap-mixed-baseline.txt'));
    assert.deepEqual([base.report!.framework, base.completeness.complete], ['vitest', true]);
    const v = judgeTestRun(1, fixture('vitest3-tap-mixed-broke.txt'), base);
    assert.deepEqual([v.framework, v.passed, v.failed], ['vitest', 2, 2]);
    assert.deepEqual([v.regressions, v.regressions_known, v.regressions_unknown], [['test/cli.test.ts > cli > adds'], true, null]);
    assert.ok(!v.failing.some((n) => /inner/.test(n)), JSON.stringify(v.failing));
  });

  it('unittest -v with doctests: each doctest has its own name, and the regressions are named', () => {
    const base = baselineOf(1, fixture('unittest-doctest-baseline.txt'));
    assert.deepEqual(
      [...base.report!.tests],
      [
        ['test_calc.TestCalc.test_add', 'pass'],
        ['test_calc.TestCalc.test_sub', 'fail'],
        ['calc.add', 'pass'],
        ['calc.sub', 'fail'],
      ],
    );
    const v = judgeTestRun(1, fixture('unittest-doctest-broke.txt'), base);
    assert.deepEqual([v.regressions, v.regressions_known, v.new_failing], [['test_calc.TestCalc.test_add', 'calc.add'], true, []]);
  });

  it('unittest of Python before 3.11 ("test_x (mod.Cls)"): two methods of one class are two tests', () => {
    const out =
      'test_add (test_calc.TestCalc) ... ok\ntest_sub (test_calc.TestCalc) ... FAIL\n\n' +
      '======================================================================\nFAIL: test_sub (test_calc.TestCalc)\n' +
      '----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n';
    assert.deepEqual(
      [...parseTestOutput(out)!.tests],
      [
        ['test_calc.TestCalc.test_add', 'pass'],
        ['test_calc.TestCalc.test_sub', 'fail'],
      ],
    );
  });
});

describe('TAP that never prints a plan (issue 27 drive, red team of the same stop)', () => {
  const tap = (...lines: string[]) => `TAP version 13\n${lines.join('\n')}\n`;

  // Without a plan nothing shows a run reached its end: a change that stops the run silently
  // (a promise that never settles, an exit from the code under test) looks like one that
  // finished. A rule that trusted plan-less TAP when the baseline had none was broken by a red
  // team (a baseline ending in node's plain "Error: boom", a fail-fast harness): it stays cut short.
  it('is cut short, not green, even when the baseline printed no plan either', () => {
    const base = baselineOf(1, tap('not ok 1 - secs'));
    const v = judgeTestRun(0, tap('ok 1 - secs'), base);
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /stops after test 1 without a plan/);
  });

  it("red team: a baseline that crashed after its failing test (node's plain 'Error: boom') or stopped fail-fast gives no cover to a run that stops early", () => {
    const crashed = baselineOf(1, tap('ok 1 - adds', 'not ok 2 - secs', '/repo/lib.js:5', '', 'Error: boom', '', 'Node.js v20.20.2'));
    assert.equal(judgeTestRun(0, tap('ok 1 - adds', 'ok 2 - secs'), crashed).green, false);
    const failFast = baselineOf(1, 'ok 1 - adds\nnot ok 2 - secs\n');
    assert.equal(judgeTestRun(0, 'ok 1 - adds\nok 2 - secs\n', failFast).green, false);
  });
});

describe('the summary never shows a bare "?"', () => {
  const verdict = (v: Partial<Verdict>): Verdict => ({
    ...judgeTestRun(1, 'FAIL a\n0 passed, 1 failed\n', null),
    ...v,
  });

  it('an attempt whose regressions are not known says why, in words, below the table', () => {
    const unknown = verdict({
      regressions_known: false,
      regressions: [],
      regressions_unknown: 'the run timed out before its tests finished',
    });
    const some = verdict({
      regressions_known: false,
      regressions: ['t.a'],
      regressions_unknown: 'its log was cut, so failures past the cut are not seen',
    });
    const attempt = (index: number, v: Verdict): FixReport['attempts'][number] => ({
      index,
      attempt_id: `a${index}`,
      temperature: 0.2,
      status: 'finished',
      stop: 'finish',
      turns: 2,
      tokens: 0,
      verdict: v,
      diff_size: 1,
      review_warnings: [],
      omitted: [],
      generated: [],
      error: null,
    });
    const summary = renderSummary({
      run_id: 'run-1',
      status: 'not_fixed',
      repo: '/r',
      base_commit: 'a'.repeat(40),
      test_cmd: 'npm test',
      provider: 'host',
      image: '',
      model: 'replay',
      baseline: verdict({}),
      environment: null,
      dependencies: [],
      attempts: [attempt(0, unknown), attempt(1, some)],
      winner: null,
      best: null,
      ground_truth: null,
      applied_to: null,
      cells: 3,
      duration_ms: 1000,
    });
    assert.doesNotMatch(summary, /\|\s*\?\s*\|/);
    assert.match(summary, /\| not known \(see below\) \|/);
    assert.match(summary, /\| at least 1: t\.a \(see below\) \|/);
    assert.match(summary, /Attempt 0: regressions not known in full: the run timed out before its tests finished\./);
    assert.match(summary, /Attempt 1: regressions not known in full: its log was cut/);
  });
});

describe('verdicts of runs recorded before failing lists were judged', () => {
  it('read back from the store, they still pass the report schema, their regressions said unknown for a reason', () => {
    const old = {
      exit_code: 1,
      framework: 'pytest',
      passed: 1,
      failed: 1,
      skipped: 0,
      failing: ['t::a'],
      regressions: [],
      regressions_known: false,
      hook_failures: [],
      green: false,
    };
    const v = VerdictSchema.parse(storedVerdict(JSON.stringify(old)));
    assert.deepEqual([v.failing_complete, v.new_failing], [false, []]);
    assert.match(v.regressions_unknown!, /older runner/);
    assert.equal(VerdictSchema.parse(storedVerdict(JSON.stringify({ ...old, regressions_known: true }))).regressions_unknown, null);
  });
});
