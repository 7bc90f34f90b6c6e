import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { judgeTestRun } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';

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

describe('judgeTestRun', () => {
  const baseline = parseTestOutput(fixture('cargo-test.txt'))!;

  it('green needs exit 0 and no regressions', () => {
    const fixed = 'running 3 tests\ntest tests::adds ... ok\ntest tests::subs ... ok\ntest tests::later ... ignored\n\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n';
    const v = judgeTestRun(0, fixed, baseline);
    assert.deepEqual([v.green, v.passed, v.failed, v.regressions, v.regressions_known], [true, 2, 0, [], true]);
  });

  it('names a baseline-passing test that now fails as a regression', () => {
    const broke = 'running 2 tests\ntest tests::adds ... FAILED\ntest tests::subs ... ok\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n';
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
    const v = judgeTestRun(1, 'noise', null, fixture('junit.sample.xml'));
    assert.equal(v.framework, 'junit');
    assert.deepEqual(v.failing, ['calc.CalcTest.subs']);
  });
});
