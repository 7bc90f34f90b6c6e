import assert from 'node:assert/strict';
import { failingFirstPlan, MAX_SELECTED, type TargetedRun, targetedOutcome } from '../../../runner/src/repair/verdicts/failingFirst.js';
import type { Judged } from '../../../runner/src/repair/verdicts/failingSet.js';
import { emptyReport, type TestOutcome, type TestReport } from '../../../runner/src/repair/verdicts/testReport.js';

function report(framework: string, tests: Record<string, TestOutcome>): TestReport {
  const r = emptyReport(framework);
  for (const [n, o] of Object.entries(tests)) {
    r.tests.set(n, o);
    if (o === 'pass') r.passed++;
    else if (o === 'fail') r.failed++;
    else r.skipped++;
  }
  return r;
}
const judged = (r: TestReport | null): Judged => ({ report: r, completeness: { complete: true } });
const targeted = (plan: ReturnType<typeof failingFirstPlan>): TargetedRun => {
  assert.equal(plan.kind, 'targeted', JSON.stringify(plan));
  return (plan as { run: TargetedRun }).run;
};

describe('failing tests first: which tests a verdict runs before the whole suite (issue 29)', () => {
  it('go test: -run through GOFLAGS on the top-level tests, package prefixes and subtests taken off', () => {
    const run = targeted(
      failingFirstPlan(
        'go test ./...',
        judged(
          report('go test', {
            'github.com/hashicorp/golang-lru/simplelru.TestLRU': 'fail',
            TestARC: 'fail',
            'TestDecodeTable/remainder_with_no_extra': 'fail',
            TestDecodeTable: 'fail',
            ExampleEncoder: 'fail',
            TestOK: 'pass',
          }),
        ),
      ),
    );
    assert.deepEqual(run.env, { GOFLAGS: '-run=^(?:TestLRU|TestARC|TestDecodeTable|ExampleEncoder)$' });
    assert.equal(run.command, null, "the user's command runs as it is");
    assert.equal(run.tests.length, 5);
    assert.equal(run.how, 'go test -run');
  });

  it('pytest: node ids through PYTEST_ADDOPTS, shlex-quoted (a parameter with spaces, a quote, a subtest label)', () => {
    const run = targeted(
      failingFirstPlan(
        'pytest -q',
        judged(
          report('pytest', {
            'tests/test_calc.py::test_eval[10 - 1]': 'fail',
            "tests/test_q.py::test_q[it's]": 'fail',
            'tests/test_s.py::test_y [msg] (i=1)': 'fail',
            'tests/test_calc.py::test_ok': 'pass',
          }),
        ),
      ),
    );
    assert.equal(
      run.env.PYTEST_ADDOPTS,
      `'tests/test_calc.py::test_eval[10 - 1]' 'tests/test_q.py::test_q[it'\\''s]' 'tests/test_s.py::test_y'`,
    );
    assert.equal(run.tests.length, 3);
  });

  it('unittest: -k added only to a command that is python -m unittest itself', () => {
    const baseline = judged(
      report('unittest', { 'tests.test_calc.CalcTest.test_mean': 'fail', 'tests.test_calc.CalcTest.test_ok': 'pass' }),
    );
    assert.equal(
      targeted(failingFirstPlan('python3 -m unittest discover -s tests -t .', baseline)).command,
      "python3 -m unittest discover -s tests -t . -k 'tests.test_calc.CalcTest.test_mean'",
    );
    for (const wrapped of ['make test', 'python -m unittest; rm -rf x', 'cd src && python -m unittest', 'python -m unittest $(cat list)']) {
      const plan = failingFirstPlan(wrapped, baseline);
      assert.equal(plan.kind, 'whole', wrapped);
      assert.match((plan as { why: string }).why, /only when the test command is "python -m unittest \.\.\." itself/);
    }
  });

  it('jest and mocha: the describe chain joined by spaces, anchored, every regular-expression character escaped; vitest: the file and the chain', () => {
    const jest = targeted(failingFirstPlan('yarn test', judged(report('jest', { 'string matching › matches (strings)?': 'fail' }))));
    assert.match(jest.env.NODE_OPTIONS!, /^--import=data:text\/javascript,[^\s'"()]+$/, 'one word NODE_OPTIONS takes as it is');
    const code = decodeURIComponent(jest.env.NODE_OPTIONS!.slice('--import=data:text/javascript,'.length));
    assert.ok(code.includes(JSON.stringify(['-t', '^(?:string matching matches \\(strings\\)\\?)$'])), code);
    assert.match(code, /jest-cli/);
    const mocha = targeted(failingFirstPlan('npm test', judged(report('mocha', { 'striptags › with tags › a.b': 'fail' }))));
    assert.ok(decodeURIComponent(mocha.env.NODE_OPTIONS!).includes(JSON.stringify(['--grep', '^(?:striptags with tags a\\.b)$'])));
    const vitest = targeted(
      failingFirstPlan(
        'pnpm test',
        judged(report('vitest', { 'src/stringify.spec.ts > Stringify & re-parse > Own tests > parent (p < div)': 'fail' })),
      ),
    );
    assert.ok(
      decodeURIComponent(vitest.env.NODE_OPTIONS!).includes(
        JSON.stringify(['src/stringify.spec.ts', '-t', '(?:^| )(?:Stringify & re-parse Own tests parent \\(p < div\\))$']),
      ),
    );
  });

  it('says why the whole suite runs: no report, a framework it cannot select in, two frameworks, too many failing tests', () => {
    const why = (cmd: string, j: Judged | null) => {
      const p = failingFirstPlan(cmd, j);
      assert.equal(p.kind, 'whole');
      return (p as { why: string }).why;
    };
    assert.match(why('make test', null), /no test report/);
    assert.match(why('npm test', judged(report('tap', { 'call-bind › works': 'fail' }))), /selecting tap tests by name is not supported/);
    assert.match(why('npm test', judged(report('jest + tap', { x: 'fail' }))), /more than one framework/);
    const many = Object.fromEntries(Array.from({ length: MAX_SELECTED + 1 }, (_, i) => [`TestX${i}`, 'fail' as const]));
    assert.match(why('go test ./...', judged(report('go test', many))), /101 failing tests/);
    const unnamed = report('pytest', {});
    unnamed.failed = 2;
    assert.match(why('pytest', judged(unnamed)), /named none of its failing tests/);
    assert.deepEqual(failingFirstPlan('pytest', judged(report('pytest', { 'a.py::t': 'pass' }))), { kind: 'none' });
  });

  it('a name is data: one with a control character, or that pytest or vitest would read as a flag or a file of arguments, is not selected (red team)', () => {
    const pytest = targeted(
      failingFirstPlan(
        'pytest',
        judged(
          report('pytest', {
            'test_a.py::test_ok_name': 'fail',
            'test_a.py::test_x[a\u0000b]': 'fail',
            '@args.txt::x': 'fail',
            '-p::evil': 'fail',
          }),
        ),
      ),
    );
    assert.equal(pytest.env.PYTEST_ADDOPTS, "'test_a.py::test_ok_name'");
    assert.deepEqual(pytest.tests, ['test_a.py::test_ok_name']);
    const only = failingFirstPlan('go test ./...', judged(report('go test', { 'TestA\nTestB': 'fail' })));
    assert.equal(only.kind, 'whole');
    const vitest = failingFirstPlan('npx vitest run', judged(report('vitest', { '--reporter=x.ts > a': 'fail' })));
    assert.equal(vitest.kind, 'whole');
  });

  it('a targeted run makes an attempt red only when it names every selected baseline failing test failing again', () => {
    const run: TargetedRun = { tests: ['TestA', 'TestB'], env: {}, command: null, how: 'go test -run' };
    assert.deepEqual(targetedOutcome(run, report('go test', { TestA: 'fail', TestB: 'fail' }), null), {
      red: true,
      stillFailing: ['TestA', 'TestB'],
    });
    // A partial fix is red too, but the whole suite judges it: its regressions are worth naming.
    assert.deepEqual(targetedOutcome(run, report('go test', { TestA: 'pass', TestB: 'fail' }), null), {
      red: false,
      why: "1 of the 2 failing tests passed, 1 failed again: the whole suite decides (one failing before and after is not the change's doing) and names what else it changed",
    });
    assert.equal(targetedOutcome(run, report('go test', { TestB: 'fail' }), null).red, false, 'one not named: not sure');
    // Everything else goes to the whole suite: passed, the filter missed them, no report, a crash.
    assert.equal(targetedOutcome(run, report('go test', { TestA: 'pass', TestB: 'pass' }), null).red, false);
    assert.equal(
      targetedOutcome(run, report('go test', { TestC: 'fail' }), null).red,
      false,
      'another test failing is for the whole suite to judge',
    );
    assert.equal(targetedOutcome(run, report('go test', { TestA: 'skip', TestB: 'skip' }), null).red, false);
    assert.equal(targetedOutcome(run, null, null).red, false);
    assert.equal(targetedOutcome(run, report('go test', { TestA: 'fail', TestB: 'fail' }), 'out of memory').red, false);
  });
});
