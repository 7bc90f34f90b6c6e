import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { judgedBaseline, judgeTestRun } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import type { Judged } from '../../../runner/src/repair/verdicts/failingSet.js';
import { isNpmTestCommand, isRegistryOnlyHook } from '../../../runner/src/repair/verdicts/npmLifecycle.js';
import { parseJunitXml, parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';
import { classifyBaseline, describeBrokenEnvironment } from '../../../runner/src/repair/verdicts/classifyBaseline.js';

const fixture = (name: string) => readFileSync(join('test', 'fixtures', 'test-output', name), 'utf8');

describe('test output parsers (one passing, one failing, one skipped test each)', () => {
  const cases: [string, string, string, string, string][] = [
    // file, framework, passing name, failing name, skipped name ('' when not named)
    ['pytest-default.txt', 'pytest', '', 'test_calc.py::test_subs', ''],
    ['pytest-qrA.txt', 'pytest', 'test_calc.py::test_adds', 'test_calc.py::test_subs', ''],
    ['node-test-tap.txt', 'node:test', 'adds', 'subs', 'later'],
    ['node-test-spec.txt', 'node:test', 'adds', 'subs', 'later'],
    ['mocha-spec.txt', 'mocha', 'adds', 'subs', ''],
    ['cargo-test.txt', 'cargo test', 'tests::adds', 'tests::subs', 'tests::later'],
    ['ctest.txt', 'ctest', 'adds', 'subs', ''],
    ['jest-verbose.sample.txt', 'jest', 'adds', 'subs', 'skipped later'],
    ['vitest.sample.txt', 'vitest', 'adds', 'subs', 'later'],
    ['go-test-v.sample.txt', 'go test', 'TestAdds', 'TestSubs', 'TestLater'],
    ['junit.sample.xml', 'junit', 'calc.CalcTest.adds', 'calc.CalcTest.subs', 'calc.CalcTest.later'],
  ];
  for (const [file, framework, pass, fail, skip] of cases) {
    it(`${file}: ${framework}`, () => {
      const r = parseTestOutput(fixture(file));
      assert.ok(r, `no parser recognised ${file}`);
      assert.equal(r.framework, framework);
      assert.equal(r.passed, 1, 'passed');
      assert.equal(r.failed, 1, 'failed');
      if (framework !== 'ctest') assert.equal(r.skipped, 1, 'skipped');
      assert.equal(r.tests.get(fail), 'fail', `failing test ${fail}: ${JSON.stringify([...r.tests])}`);
      if (pass) assert.equal(r.tests.get(pass), 'pass');
      if (skip) assert.equal(r.tests.get(skip), 'skip');
    });
  }

  it('reads the plain "N passed, N failed" closing line', () => {
    const r = parseTestOutput('ok below\nFAIL above: got 0, want 10\nok inside\n2 passed, 1 failed\n');
    assert.deepEqual([r?.framework, r?.passed, r?.failed, r?.tests.get('above'), r?.tests.get('inside')], ['plain', 2, 1, 'fail', 'pass']);
  });

  it('recognises nothing in output that is not a test report', () => {
    assert.equal(parseTestOutput('make: *** No rule to make target test.  Stop.\n'), null);
    assert.equal(parseTestOutput(''), null);
  });

  it('ignores ANSI colours', () => {
    const coloured = '\x1b[32m1 passed\x1b[0m, \x1b[31m2 failed\x1b[0m in 0.10s\n';
    assert.deepEqual([parseTestOutput(coloured)?.passed, parseTestOutput(coloured)?.failed], [1, 2]);
  });
});

/** A baseline as runBaseline keeps it: its report, and whether its failing list is whole. */
const judgedRun = (exitCode: number, output: string): Judged => {
  const v = judgeTestRun(exitCode, output, null);
  return judgedBaseline(parseTestOutput(output), v);
};

describe('judgeTestRun', () => {
  const baseline = judgedRun(101, fixture('cargo-test.txt'));

  it('green needs exit 0 and no regressions', () => {
    const fixed =
      'running 3 tests\ntest tests::adds ... ok\ntest tests::subs ... ok\ntest tests::later ... ignored\n\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n';
    const v = judgeTestRun(0, fixed, baseline);
    assert.deepEqual([v.green, v.passed, v.failed, v.regressions, v.regressions_known], [true, 2, 0, [], true]);
  });

  it('names a baseline-passing test that now fails as a regression', () => {
    const broke =
      'running 2 tests\ntest tests::adds ... FAILED\ntest tests::subs ... ok\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n';
    const v = judgeTestRun(101, broke, baseline);
    assert.deepEqual(v.regressions, ['tests::adds']);
    assert.deepEqual(v.failing, ['tests::adds']);
    assert.equal(v.green, false);
  });

  it('without named tests, falls back on the exit code and says regressions are unknown', () => {
    const v = judgeTestRun(2, 'Segmentation fault\n', null);
    assert.deepEqual([v.framework, v.failed, v.green, v.regressions_known], [null, 1, false, false]);
  });

  it('prefers a JUnit XML report over the console output', () => {
    const v = judgeTestRun(1, 'noise', null, parseJunitXml(fixture('junit.sample.xml')));
    assert.equal(v.framework, 'junit');
    assert.deepEqual(v.failing, ['calc.CalcTest.subs']);
  });
});

describe('test output parsers for frameworks added with real projects (captured from the real tools)', () => {
  it('tape: assertions named under their test, totals with any spacing, skipped tests from "# SKIP"', () => {
    const r = parseTestOutput(fixture('tape.txt'))!;
    assert.equal(r.framework, 'tap');
    assert.deepEqual([r.passed, r.failed, r.skipped], [2, 1, 1]);
    assert.deepEqual(
      [...r.tests],
      [
        ['adds › should be equal', 'pass'],
        ['adds › should be truthy', 'pass'],
        ['subs › should be equal', 'fail'],
        ['later', 'skip'],
      ],
    );
  });

  it('pytest 9 subtests: SUBFAILED lines are named, counts include them', () => {
    const r = parseTestOutput(fixture('pytest9-subtests-rA.txt'))!;
    assert.equal(r.framework, 'pytest');
    assert.equal(r.tests.get('test_sub.py::test_split [case] (i=1)'), 'fail');
    assert.equal(r.tests.get('test_sub.py::test_split'), 'fail');
    assert.equal(r.tests.get('test_sub.py::test_adds'), 'pass');
    assert.deepEqual([r.passed, r.failed, r.skipped], [1, 2, 1]);
  });

  it('unittest: -v names every test; without -v the failures are still named from their headers', () => {
    const v = parseTestOutput(fixture('unittest-v.txt'))!;
    assert.equal(v.framework, 'unittest');
    assert.deepEqual([v.passed, v.failed, v.skipped], [1, 1, 1]);
    assert.equal(v.tests.get('test_calc_ut.TestCalc.test_adds'), 'pass');
    assert.equal(v.tests.get('test_calc_ut.TestCalc.test_subs'), 'fail');
    const d = parseTestOutput(fixture('unittest-default.txt'))!;
    assert.deepEqual([d.framework, d.passed, d.failed, d.skipped], ['unittest', 1, 1, 1]);
    assert.deepEqual([...d.tests], [['test_calc_ut.TestCalc.test_subs', 'fail']]);
    assert.deepEqual(
      [
        parseTestOutput('....\n----------------------------------------------------------------------\nRan 4 tests in 0.002s\n\nOK\n')
          ?.passed,
      ],
      [4],
    );
  });

  it('regressions come from failing sets: pytest without -rA names no passing test, and the regression is still named', () => {
    const quiet = judgedRun(1, fixture('pytest-default.txt'));
    const broke = 'FAILED test_calc.py::test_adds - assert 0\nFAILED test_calc.py::test_subs - assert 0\n2 failed in 0.10s\n';
    const v = judgeTestRun(1, broke, quiet);
    assert.deepEqual([v.regressions, v.regressions_known, v.new_failing], [['test_calc.py::test_adds'], true, []]);
    const named = judgeTestRun(1, broke, judgedRun(1, fixture('pytest-qrA.txt')));
    assert.deepEqual([named.regressions, named.regressions_known], [['test_calc.py::test_adds'], true]);
  });
});

describe('npm lifecycle hooks (real npm output)', () => {
  it('tests passed, posttest failed for want of the network: green, and the hook is named', () => {
    const out = fixture('npm-posttest-network.txt');
    const v = judgeTestRun(1, out, null);
    assert.equal(v.green, true);
    assert.deepEqual(v.hook_failures, [{ hook: 'posttest', command: 'npm audit --audit-level=high', reason: 'network' }]);
    assert.deepEqual([v.passed, v.failed], [2, 0]);
  });

  it('a failing test stage is red even when the output mentions the network elsewhere', () => {
    const v = judgeTestRun(1, fixture('npm-test-failing.txt'), null);
    assert.equal(v.green, false);
    assert.deepEqual(v.hook_failures, []);
    assert.deepEqual(v.failing, ['subs']);
  });

  it('a posttest that fails for a reason of its own stays red', () => {
    const out = fixture('npm-posttest-network.txt').replace(
      /getaddrinfo EAI_AGAIN registry.npmjs.org/,
      'found 3 high severity vulnerabilities',
    );
    assert.equal(judgeTestRun(1, out, null).green, false);
  });

  it('the hook rule holds only for npm test commands: the same output from any other command is red', () => {
    const out = fixture('npm-posttest-network.txt');
    assert.equal(judgeTestRun(1, out, null, null, { npmHooks: true }).green, true);
    assert.equal(judgeTestRun(1, out, null, null, { npmHooks: false }).green, false);
    for (const cmd of ['npm test', 'npm t', 'npm run test', ' npm run-script test -- --grep x', 'npm test --silent'])
      assert.equal(isNpmTestCommand(cmd), true, cmd);
    for (const cmd of ['node test.js', 'npm run tests-only', 'npx jest', 'pnpm test', 'sh -c "npm test"', 'npm testx'])
      assert.equal(isNpmTestCommand(cmd), false, cmd);
    // Only a hook that does nothing but ask the registry can be discounted (red team rounds 4-7).
    for (const h of [
      'npm audit',
      'npx npm audit',
      'npx -y npm audit --audit-level=high',
      'npm outdated',
      'npx audit-ci --moderate',
      // qs 6.13 and other published packages pin npm itself by a version range (issue 26).
      "npx npm@'>=10.2' audit --production",
      'npx npm@10 audit',
      // safe-regex-test 1.0.0 and other ljharb packages: aud, npm audit with its exit codes.
      'aud --production',
      'npx aud --production',
    ])
      assert.equal(isRegistryOnlyHook(h), true, h);
    for (const h of [
      'node e2e.js',
      'node --test e2e/',
      'npm audit && node e2e.js',
      'npm run e2e',
      'npm audit; node x',
      'npx some-e2e',
      "npx npm@'file:./tools/npm' audit",
      'npx npm@github:someone/npm audit',
      'aud-local --production',
      'aud --production && node x',
      "npx npm@'>=10' audit' && node x '",
    ])
      assert.equal(isRegistryOnlyHook(h), false, h);
  });
});

describe('classifyBaseline: a broken environment is not a failing test', () => {
  const facts = (output: string, exitCode = 1, more: Partial<Parameters<typeof classifyBaseline>[0]> = {}) => ({
    exitCode,
    timedOut: false,
    output,
    report: parseTestOutput(output),
    testCmd: 'npm test',
    cellTimeoutS: 600,
    ...more,
  });

  it('names each cause with the way out', () => {
    const cases: [string, number, string, RegExp][] = [
      ['sh: 1: tape: not found\n', 127, 'command_not_found', /tape: command not found.*--install-cmd/],
      ['bash: line 1: pytest: command not found\n', 127, 'command_not_found', /pytest: command not found/],
      ["Error: Cannot find module 'left-pad'\nRequire stack:\n- /w/index.js\n", 1, 'missing_module', /left-pad/],
      ["E   ModuleNotFoundError: No module named 'requests'\n", 2, 'missing_module', /requests/],
      [
        'npm error network request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n',
        1,
        'network',
        /--allow-net/,
      ],
      [
        '\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n',
        5,
        'no_tests',
        /--test-cmd/,
      ],
    ];
    for (const [out, code, cause, fix] of cases) {
      const b = classifyBaseline(facts(out, code));
      assert.equal(b?.cause, cause, out);
      assert.match(describeBrokenEnvironment(b!), fix);
    }
    assert.equal(classifyBaseline(facts('', 137, { timedOut: true }))?.cause, 'timeout');
    // pytest counts a collection error as a failure: not one test ran.
    const collection = classifyBaseline(facts(fixture('pytest-collection-error.txt'), 2, { testCmd: 'python3 -m pytest -q' }));
    assert.equal(collection?.cause, 'missing_module');
    assert.match(collection!.detail, /textkit/);
  });

  it('tests that ran and failed are the oracle, whatever else the output says', () => {
    assert.equal(classifyBaseline(facts(fixture('pytest-qrA.txt'))), null);
    assert.equal(classifyBaseline(facts(fixture('npm-test-failing.txt'))), null);
    const importFailure = "FAILED test_x.py::test_a - ModuleNotFoundError: No module named 'calc2'\n1 failed, 3 passed in 0.1s\n";
    assert.equal(classifyBaseline(facts(importFailure)), null);
  });
});

describe('plain TAP without totals (a C test program)', () => {
  it('counts and names from the plan and the ok / not ok lines', () => {
    const out =
      'cc -Wall -o tests/t tests/t.c\n1..3\nok 1 - fifo order\nnot ok 2 - wraps around\nok 3 - later # SKIP no clock\n2 passed, 1 failed\nmake: *** [Makefile:19: test] Error 1\n';
    const r = parseTestOutput(out)!;
    assert.equal(r.framework, 'tap');
    assert.deepEqual([r.passed, r.failed, r.skipped], [1, 1, 1]);
    assert.deepEqual(
      [...r.tests],
      [
        ['fifo order', 'pass'],
        ['wraps around', 'fail'],
        ['later', 'skip'],
      ],
    );
  });
});
