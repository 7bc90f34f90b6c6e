import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Judged } from '../../../runner/src/repair/verdicts/failingSet.js';
import { npmrcActiveKey } from '../../../runner/src/repair/verdicts/hookProgram.js';
import { judgedBaseline, judgeTestRun } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { parsePytestJunitXml } from '../../../runner/src/repair/verdicts/junitXml.js';
import { parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';

/**
 * Red team 6 (issue 26): each case is the real console of a fix run the red team built (the
 * repository, the agent's change and the command in test/fixtures/test-output/README.md), and
 * each was misjudged before: a wrong change "fixed", a regression unnamed while said known, or
 * a right fix red.
 */
const fixture = (name: string) => readFileSync(join('test', 'fixtures', 'test-output', `rt6-${name}.txt`), 'utf8');
const baselineOf = (exitCode: number, output: string): Judged =>
  judgedBaseline(parseTestOutput(output), judgeTestRun(exitCode, output, null));
const judge = (name: string, baseExit: number, exit: number, attempt = 'attempt') =>
  judgeTestRun(exit, fixture(`${name}-${attempt}`), baselineOf(baseExit, fixture(`${name}-baseline`)));

describe('red team 6 (issue 26): a wrong change is never green on what it printed', () => {
  it('01 `mocha a; mocha b`: the first run’s failure counts though the last run passed (its totals add up)', () => {
    const v = judge('mocha-two-runs', 1, 0);
    assert.equal(v.green, false);
    assert.deepEqual([v.passed, v.failed, v.regressions, v.regressions_known], [2, 1, ['add › adds zero'], true]);
  });

  it('02 node:test: the baseline’s failing test skipped by the change is not a pass', () => {
    const v = judge('node-test-skip', 1, 0);
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /strips accents were skipped, not passed/);
  });

  it('02b pytest -q -rA: one more skip than the baseline while its failing test is not shown passing is no fix', () => {
    const v = judge('pytest-skip', 1, 0);
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /skipped 1 more test\(s\) than the baseline/);
  });

  it('02b with the report pytest wrote: the failing test named skipped is not a pass', () => {
    const xml = (outcome: string) =>
      parsePytestJunitXml(
        `<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2"><testcase classname="tests.test_cfg" name="test_ini" file="tests/test_cfg.py"/><testcase classname="tests.test_cfg" name="test_toml_quotes_strings" file="tests/test_cfg.py">${outcome}</testcase></testsuite></testsuites>`,
      );
    const base = judgedBaseline(
      parseTestOutput(fixture('pytest-skip-baseline')),
      judgeTestRun(1, fixture('pytest-skip-baseline'), null, xml('<failure message="x"/>')),
    );
    const v = judgeTestRun(0, fixture('pytest-skip-attempt'), base, xml('<skipped message="no tomli_w"/>'));
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /test_toml_quotes_strings were skipped/);
  });

  it('03 `node --test; pytest` with pytest’s report: the node:test failure the console shows is not dropped for the file', () => {
    const written = parsePytestJunitXml(
      '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2"><testcase classname="py.test_norm" name="test_strips" file="py/test_norm.py"/><testcase classname="py.test_norm" name="test_lowers" file="py/test_norm.py"/></testsuite></testsuites>',
    );
    const base = baselineOf(1, fixture('node-test-then-pytest-baseline'));
    const v = judgeTestRun(0, fixture('node-test-then-pytest-attempt'), base, written);
    assert.equal(v.green, false);
    assert.deepEqual(v.regressions, ['slug joins words']);
  });

  it('04 `tape; sh cli.sh`: a tape run cut short by a crash is seen though a stream without a version line follows', () => {
    const v = judge('tape-then-bare-tap', 1, 0);
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /TAP stream 1 of 2 stops after test 1 without a plan/);
    assert.ok(!v.failing.includes('pad › cli adds'), 'tape’s group does not name the next stream’s tests');
  });

  it('05 pytest: a report file the change wrote itself before exiting 0 (no totals on the console) is nobody’s word', () => {
    const forged = parsePytestJunitXml(
      '<?xml version="1.0"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="2"><testcase classname="tests.test_calc" name="test_adds" file="tests/test_calc.py"/><testcase classname="tests.test_calc" name="test_subtracts" file="tests/test_calc.py"/></testsuite></testsuites>',
    );
    const base = baselineOf(1, '..F\nFAILED tests/test_calc.py::test_subtracts - assert 4 == 2\n1 failed, 1 passed in 0.02s\n');
    const v = judgeTestRun(0, '\n', base, forged);
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /no test report the runner reads/);
  });

  it('08 `ava; mocha`: AVA’s failure counts though mocha reads AVA’s ✔ lines as its own', () => {
    const v = judge('ava-then-mocha', 2, 0);
    assert.equal(v.green, false);
    assert.ok(v.failing.includes('pads left'), JSON.stringify(v.failing));
  });

  it('10 `node cli.js; node --test`: a program’s own "1 passed, 1 failed" line before a passing run counts its failure', () => {
    const v = judge('plain-then-node-test', 1, 0);
    assert.equal(v.green, false);
    assert.deepEqual(v.regressions, ['shouts']);
  });
});

describe('red team 6 (issue 26): a regression is named when a title repeats', () => {
  it('06 mocha: a top-level test and a suite’s test of one title are two tests', () => {
    const v = judge('mocha-top-level-title', 1, 1);
    assert.deepEqual([v.regressions, v.regressions_known, v.green], [['handles empty input'], true, false]);
  });

  it('12 vitest: the same describe chain in two files is two tests', () => {
    const v = judge('vitest-two-files', 1, 1);
    assert.deepEqual([v.regressions, v.regressions_known], [['packages/b/test/parse.test.js > parse > handles empty input'], true]);
  });
});

describe('red team 6 (issue 26): a right fix is green', () => {
  it('07 mocha: a failing "before each" hook is the failure of the test it ran for, which now passes', () => {
    const base = baselineOf(1, fixture('mocha-hook-baseline'));
    assert.deepEqual(base.report!.tests.get('db › starts empty'), 'fail');
    const v = judgeTestRun(0, fixture('mocha-hook-fixed'), base);
    assert.equal(v.green, true, v.failing_incomplete ?? '');
  });

  it('09 node:test: a test file that failed to load (named by its path) is cleared once its tests run', () => {
    const v = judge('node-test-file-failure', 1, 0, 'fixed');
    assert.equal(v.green, true, v.failing_incomplete ?? '');
  });

  it('09, the other way: a change that deletes the failing file’s tests runs fewer tests, and is not green', () => {
    const base = baselineOf(1, fixture('node-test-file-failure-baseline'));
    const none = 'TAP version 13\n1..0\n# tests 0\n# suites 0\n# pass 0\n# fail 0\n# cancelled 0\n# skipped 0\n# todo 0\n';
    assert.equal(judgeTestRun(0, none, base).green, false);
  });
});

describe('red team 6 (issue 26): a project .npmrc that can run the tree’s code', () => {
  it('11 only keys that say where packages come from and how npm saves them are inert', () => {
    assert.equal(npmrcActiveKey(null), null);
    assert.equal(
      npmrcActiveKey('registry=https://r.example/\n@acme:registry=https://a.example/\nsave-exact=true\n# node-options=x\n'),
      null,
    );
    assert.equal(npmrcActiveKey('audit-level=high\nnode-options=--require=./checks/contract.js\n'), 'node-options');
    assert.equal(npmrcActiveKey('script-shell=./sh'), 'script-shell');
    assert.equal(npmrcActiveKey('  git = ./bin/git'), 'git');
  });
});

/** Red team 7 (issue 26): the real consoles of its runs (test/fixtures/test-output/README.md). */
const rt7 = (name: string) => readFileSync(join('test', 'fixtures', 'test-output', `rt7-${name}.txt`), 'utf8');
const judge7 = (name: string, baseExit: number, exit: number) =>
  judgeTestRun(exit, rt7(`${name}-attempt`), baselineOf(baseExit, rt7(`${name}-baseline`)));

describe('red team 7 (issue 26): another run’s region is only its own run', () => {
  it('02 `pytest e2e; mocha; pytest unit`: mocha’s failure between two pytest runs counts, and both pytest summaries add up', () => {
    const v = judge7('pytest-mocha-pytest', 1, 0);
    assert.equal(v.green, false);
    assert.ok(
      v.failing.some((n) => /greet/.test(n)),
      JSON.stringify(v.failing),
    );
  });

  it('03 `jest; vitest run`: jest’s failure before vitest’s run counts though vitest reads its ✓ lines', () => {
    const v = judge7('jest-then-vitest', 1, 0);
    assert.equal(v.green, false);
    assert.ok(v.failed >= 1);
  });
});

describe('red team 7 (issue 26): a failure is named by mocha’s own account, not by what tests print', () => {
  it('04 a test printing an indented usage text does not rename the regression onto the baseline’s failing test', () => {
    const v = judge7('mocha-console-suite', 1, 1);
    assert.deepEqual([v.failing, v.regressions, v.regressions_known], [['cli › handles empty input'], ['cli › handles empty input'], true]);
  });

  it('05 a failing test that logs indented JSON keeps its name, so the right fix is green', () => {
    const v = judge7('mocha-indented-console', 1, 0);
    assert.equal(v.green, true, v.failing_incomplete ?? '');
  });
});

describe('red team 7 (issue 26): pytest node ids with spaces in their parameters', () => {
  it('10 "test_eval[10 - 1-9]" and "test_eval[10 - 5-5]" are two tests: the regression is named', () => {
    const v = judge7('pytest-param-dash', 1, 1);
    assert.deepEqual([v.regressions, v.regressions_known], [['tests/test_calc.py::test_eval[10 - 1-9]'], true]);
  });
});
