import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failingFirstPlan, type TargetedRun } from '../../../runner/src/repair/verdicts/failingFirst.js';
import { parseTestOutput } from '../../../runner/src/repair/verdicts/parsers.js';
import { TEST_REPORTING_ENV } from '../../../runner/src/repair/verdicts/testRunOutput.js';
import { requireFeature } from '../../helpers/requirement.js';

/**
 * The selections of failingFirst.ts against the real test runners: the full run names the
 * failing tests, the plan made from that report runs them (and not the rest) through the
 * user's own command, with the variables appended as a cell appends them.
 */
function run(dir: string, cmd: string, add: Record<string, string> = {}) {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...TEST_REPORTING_ENV,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
  };
  for (const [k, v] of Object.entries(add)) env[k] = env[k] ? `${env[k]} ${v}` : v;
  const r = spawnSync('sh', ['-c', cmd], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

function planFrom(dir: string, cmd: string): { run: TargetedRun; whole: ReturnType<typeof parseTestOutput> } {
  const whole = run(dir, cmd);
  const report = parseTestOutput(whole.output);
  assert.ok(report, whole.output);
  const plan = failingFirstPlan(cmd, { report, completeness: { complete: true } });
  assert.equal(plan.kind, 'targeted', `${JSON.stringify(plan)}\n${whole.output}`);
  return { run: (plan as { run: TargetedRun }).run, whole: report };
}

function ranOnly(dir: string, cmd: string, t: TargetedRun, expected: string[]) {
  const out = run(dir, t.command ?? cmd, t.env);
  const report = parseTestOutput(out.output);
  assert.ok(report, out.output);
  const ran = [...report.tests].filter(([, o]) => o !== 'skip').map(([n]) => n);
  assert.deepEqual(ran.sort(), [...expected].sort(), out.output);
}

describe('failing tests first against the real runners (issue 29)', function () {
  this.timeout(180_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'forge-failing-first-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('go test: GOFLAGS -run runs the failing tests, their subtests and examples, in every package', function () {
    requireFeature(this, spawnSync('go', ['version']).status === 0, 'go is not installed');
    writeFileSync(join(dir, 'go.mod'), 'module example.com/ff\n\ngo 1.18\n');
    writeFileSync(
      join(dir, 'a_test.go'),
      [
        'package ff',
        'import ("fmt"; "testing")',
        'func TestOK(t *testing.T) {}',
        'func TestBad(t *testing.T) { t.Run("sub case", func(t *testing.T) { t.Fatal("x") }) }',
        'func ExampleBad() {',
        '\tfmt.Println("got")',
        '\t// Output: want',
        '}',
      ].join('\n'),
    );
    mkdirSync(join(dir, 'sub'));
    writeFileSync(
      join(dir, 'sub', 'b_test.go'),
      'package sub\nimport "testing"\nfunc TestBad(t *testing.T) {}\nfunc TestOther(t *testing.T) {}\n',
    );
    const { run: t } = planFrom(dir, 'go test ./...');
    assert.match(t.env.GOFLAGS!, /^-run=\^\(\?:/);
    ranOnly(dir, 'go test ./...', t, ['example.com/ff.TestBad', 'TestBad/sub_case', 'ExampleBad', 'example.com/ff/sub.TestBad']);
  });

  it('pytest: the node ids through PYTEST_ADDOPTS, a parameter with spaces and quotes among them', function () {
    requireFeature(this, spawnSync('python3', ['-m', 'pytest', '--version']).status === 0, 'pytest is not installed');
    writeFileSync(
      join(dir, 'test_m.py'),
      [
        'import pytest',
        'def test_ok(): pass',
        "@pytest.mark.parametrize('x', ['10 - 1', \"it's\", 'fine'])",
        "def test_param(x): assert x == 'fine'",
        'def test_bad(): assert False',
      ].join('\n'),
    );
    const { run: t } = planFrom(dir, 'python3 -m pytest -q -p no:cacheprovider');
    ranOnly(dir, 'python3 -m pytest -q -p no:cacheprovider', t, [
      'test_m.py::test_param[10 - 1]',
      "test_m.py::test_param[it's]",
      'test_m.py::test_bad',
    ]);
  });

  it('unittest: -k on python -m unittest discover', function () {
    requireFeature(this, spawnSync('python3', ['--version']).status === 0, 'python3 is not installed');
    mkdirSync(join(dir, 'tests'));
    writeFileSync(join(dir, 'tests', '__init__.py'), '');
    writeFileSync(
      join(dir, 'tests', 'test_u.py'),
      [
        'import unittest',
        'class T(unittest.TestCase):',
        '    def test_ok(self): pass',
        '    def test_bad(self): self.fail("x")',
        '    def test_worse(self): raise RuntimeError("y")',
      ].join('\n'),
    );
    const cmd = 'python3 -m unittest discover -v -s tests -t .';
    const { run: t } = planFrom(dir, cmd);
    ranOnly(dir, cmd, t, ['tests.test_u.T.test_bad', 'tests.test_u.T.test_worse']);
  });

  it('mocha behind npm test: the preload adds --grep to mocha alone, a title with quotes and $( ) taken as text', function () {
    const mocha = join(process.cwd(), 'node_modules', 'mocha', 'bin', 'mocha.js');
    requireFeature(this, existsSync(mocha), 'mocha is not installed here');
    writeFileSync(
      join(dir, 'a.test.js'),
      [
        "const assert = require('node:assert');",
        "describe('suite', () => {",
        "  it('passes', () => {});",
        "  it('fails \\'$(touch pwned)\\' `x` (a.b)', () => assert.fail('x'));",
        // What the runner starts does not inherit the preload: a require hook of a CLI a test runs would break.
        "  it('fails too', () => { require('node:fs').writeFileSync('inherited.txt', String(process.env.NODE_OPTIONS)); assert.fail('y'); });",
        '});',
      ].join('\n'),
    );
    // Behind a script, as `npm test` runs it: the filter reaches mocha all the same.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'm', version: '1.0.0', scripts: { test: `node ${mocha} a.test.js` } }));
    const { run: t } = planFrom(dir, 'npm test --silent');
    ranOnly(dir, 'npm test --silent', t, ["suite › fails '$(touch pwned)' `x` (a.b)", 'suite › fails too']);
    assert.equal(existsSync(join(dir, 'pwned')), false);
    assert.equal(readFileSync(join(dir, 'inherited.txt'), 'utf8'), 'undefined', "the runner's own NODE_OPTIONS no longer has the preload");
    // Node itself and npm are not mocha: a plain node program's argv is untouched.
    writeFileSync(join(dir, 'argv.js'), 'console.log(JSON.stringify(process.argv.slice(2)))');
    assert.equal(run(dir, 'node argv.js x', t.env).output.trim(), '["x"]');
  });
});
