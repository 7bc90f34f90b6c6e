import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import Docker from 'dockerode';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAMPLES, sampleRepo } from '../../helpers/sampleRepo.js';
import { bakeImage } from '../../../runner/src/images/bakeImage.js';
import { FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { git } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';
import { requireQemu } from '../../helpers/qemu.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
function fix(repo: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [RUNNER, 'fix', '--repo', repo, '--json', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { status: r.status, stderr: r.stderr, report: r.stdout ? FixReportSchema.parse(JSON.parse(r.stdout)) : null };
}

const replay = (name: string) => `replay:${join(SAMPLES, name, 'replay.json')}`;
const issue = (name: string) => join(SAMPLES, name, 'issue.md');
const attemptsOf = (name: string) =>
  String((JSON.parse(readFileSync(join(SAMPLES, name, 'replay.json'), 'utf8')) as { attempts: unknown[] }).attempts.length);

/** A turn of py-calc's replay that changes the average's line to `new_string`, and the turn that finishes. */
const edit = (new_string: string) => ({
  tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.py', old_string: 'return sum(values) / (len(values) + 1)', new_string } }],
});
const finish = { tool_calls: [{ name: 'finish', arguments: {} }] };

describe('forge-runner fix (end to end, replay model, real cells)', function () {
  this.timeout(300_000);

  for (const name of ['py-calc', 'js-slug', 'c-clamp']) {
    it(`${name}: fixed on host cells; wrong candidates lose; only the winner's branch remains`, () => {
      const repo = sampleRepo(name);
      const out = mkdtempSync(join(tmpdir(), 'forge-out-'));
      try {
        const head = git(repo.dir, 'rev-parse', 'HEAD');
        const r = fix(repo.dir, [
          '--provider',
          'host',
          '--issue-file',
          issue(name),
          '--model',
          replay(name),
          '--attempts',
          attemptsOf(name),
          '--out',
          out,
        ]);
        assert.equal(r.status, 0, r.stderr);
        const report = r.report!;
        assert.equal(report.status, 'fixed');
        assert.equal(report.baseline.green, false);
        assert.ok(report.winner!.attempts[0]!.endsWith('-a0'));
        assert.ok(
          report.attempts.some((a) => a.verdict && !a.verdict.green),
          `the wrong candidate should be red:\n${r.stderr}`,
        );
        assert.equal(report.ground_truth?.verdict?.green, true);
        for (const f of ['winner.diff', 'report.json', 'summary.md']) assert.ok(existsSync(join(out, f)), f);
        // The user's checkout is untouched; the winner lives on its branch.
        assert.equal(git(repo.dir, 'rev-parse', 'HEAD'), head);
        assert.equal(git(repo.dir, 'status', '--porcelain'), '');
        const branches = git(repo.dir, 'branch', '--list', 'forge/*')
          .trim()
          .split('\n')
          .map((b) => b.trim());
        assert.deepEqual(branches, [report.winner!.branch]);
        assert.equal(existsSync(join(repo.dir, '.git', 'forge-cells')) ? readdirSync(join(repo.dir, '.git', 'forge-cells')).length : 0, 0);
        assert.ok(git(repo.dir, 'diff', 'main', report.winner!.branch!).includes('+'), 'the branch carries the fix');
        // The run is in the store's history.
        const shown = spawnSync(process.execPath, [RUNNER, 'runs', 'show', report.run_id, '--json'], { encoding: 'utf8' });
        const history = JSON.parse(shown.stdout) as { status: string; attempts: { verdict: { green: boolean } | null }[]; cells: number };
        assert.equal(history.status, 'fixed');
        assert.equal(history.attempts.length, report.attempts.length);
        assert.equal(history.cells, report.cells);
        assert.match(spawnSync(process.execPath, [RUNNER, 'runs', 'list'], { encoding: 'utf8' }).stdout, new RegExp(report.run_id));
      } finally {
        repo.cleanup();
        rmSync(out, { recursive: true, force: true });
      }
    });
  }

  for (const name of ['py-calc', 'js-slug', 'c-clamp']) {
    it(`${name}: fixed on docker cells from a baked image`, async function () {
      const why = await dockerUnavailable(TEST_IMAGES.bookworm);
      requireFeature(this, why === null, why ?? '');
      const repo = sampleRepo(name);
      try {
        const baked = await bakeImage(new Docker({ socketPath: '/var/run/docker.sock' }), { repo: repo.dir, base: TEST_IMAGES.bookworm });
        const r = fix(repo.dir, ['--issue-file', issue(name), '--model', replay(name), '--attempts', attemptsOf(name)]);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.report!.provider, 'docker');
        assert.equal(r.report!.image, baked.image);
        assert.ok(r.report!.winner!.attempts[0]!.endsWith('-a0'));
      } finally {
        repo.cleanup();
      }
    });
  }

  it('js-slug: fixed with every command in a qemu micro-VM (host root read-only, worktree shared)', function () {
    requireQemu(this);
    this.timeout(600_000);
    const repo = sampleRepo('js-slug');
    try {
      const r = fix(repo.dir, ['--provider', 'qemu', '--issue-file', issue('js-slug'), '--model', replay('js-slug'), '--attempts', '2']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.report!.provider, 'qemu');
      assert.ok(r.report!.winner, 'a winner chosen by tests that ran in VMs');
      assert.equal(git(repo.dir, 'status', '--porcelain'), '', 'the user tree is untouched');
    } finally {
      repo.cleanup();
    }
  });

  it('--install-cmd runs once for the run, in its own cell; a failing one stops the run with its last lines', () => {
    const repo = sampleRepo('c-clamp');
    try {
      const r = fix(repo.dir, [
        '--provider',
        'host',
        '--issue-file',
        issue('c-clamp'),
        '--model',
        replay('c-clamp'),
        '--attempts',
        '2',
        '--install-cmd',
        'make test_clamp',
      ]);
      assert.equal(r.status, 0, r.stderr);
      const db = new Database(join(process.env.FORGE_STATE_DIR!, 'forge.db'), { readonly: true });
      const installs = (
        db.prepare(`SELECT count(*) n FROM cell_executions WHERE run_id = ? AND purpose = 'install'`).get(r.report!.run_id) as { n: number }
      ).n;
      db.close();
      assert.equal(installs, 1, 'once for the run, not per worktree');
      const bad = fix(repo.dir, [
        '--provider',
        'host',
        '--issue-file',
        issue('c-clamp'),
        '--model',
        replay('c-clamp'),
        '--install-cmd',
        'exit 7',
      ]);
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /install command failed \(exit 7\).*fix --install-cmd/);
      assert.equal(git(repo.dir, 'worktree', 'list').trim().split('\n').length, 1, 'the install worktree was left behind');
    } finally {
      repo.cleanup();
    }
  });

  it('--apply writes the winner to the working tree and --branch names it; nothing else moves', () => {
    const repo = sampleRepo('c-clamp');
    try {
      const head = git(repo.dir, 'rev-parse', 'HEAD');
      const r = fix(repo.dir, [
        '--provider',
        'host',
        '--issue-file',
        issue('c-clamp'),
        '--model',
        replay('c-clamp'),
        '--attempts',
        '2',
        '--apply',
        '--branch',
        'fix/clamp',
      ]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.report!.applied_to ?? '', /working tree/);
      assert.match(readFileSync(join(repo.dir, 'clamp.c'), 'utf8'), /return high;/);
      assert.equal(git(repo.dir, 'rev-parse', 'HEAD'), head, 'HEAD moved');
      assert.equal(git(repo.dir, 'diff', '--cached', '--name-only'), '', 'the index changed');
      assert.equal(git(repo.dir, 'status', '--porcelain').trim(), 'M clamp.c');
      assert.equal(git(repo.dir, 'rev-parse', 'fix/clamp'), git(repo.dir, 'rev-parse', r.report!.winner!.branch!));
    } finally {
      repo.cleanup();
    }
  });

  it('refuses a model that reaches outside the repository, and goes on', () => {
    const repo = sampleRepo('py-calc');
    const script = join(repo.dir, '..', `evil-${Date.now()}.json`);
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          [
            { tool_calls: [{ name: 'read_file', arguments: { path: '../../etc/passwd' } }] },
            { tool_calls: [{ name: 'write_file', arguments: { path: '/tmp/forge-evil-write', content: 'x' } }] },
            {
              tool_calls: [
                {
                  name: 'edit_file',
                  arguments: {
                    path: 'calc.py',
                    old_string: 'return sum(values) / (len(values) + 1)',
                    new_string: 'return sum(values) / len(values)',
                  },
                },
              ],
            },
            { tool_calls: [{ name: 'finish', arguments: { summary: 'ok' } }] },
          ],
        ],
      }),
    );
    try {
      const r = fix(repo.dir, ['--provider', 'host', '--issue-text', 'average is wrong', '--model', `replay:${script}`, '--attempts', '1']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(existsSync('/tmp/forge-evil-write'), false);
      const db = new Database(join(process.env.FORGE_STATE_DIR!, 'forge.db'), { readonly: true });
      const turns = db.prepare('SELECT tool_results_json FROM model_turns WHERE run_id = ? ORDER BY turn_idx').all(r.report!.run_id) as {
        tool_results_json: string;
      }[];
      db.close();
      assert.match(turns[0]!.tool_results_json, /outside the repository/);
      assert.doesNotMatch(turns[0]!.tool_results_json, /root:x:0:0/);
      assert.match(turns[1]!.tool_results_json, /outside the repository/);
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  it('refuses a dirty tree and leaves it untouched', () => {
    const repo = sampleRepo('py-calc');
    try {
      writeFileSync(join(repo.dir, 'calc.py'), '# my work in progress\n');
      const r = fix(repo.dir, ['--provider', 'host', '--issue-text', 'x', '--model', replay('py-calc')]);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /uncommitted changes.*--allow-dirty/);
      assert.equal(readFileSync(join(repo.dir, 'calc.py'), 'utf8'), '# my work in progress\n');
      assert.equal(git(repo.dir, 'branch', '--list', 'forge/*'), '');
    } finally {
      repo.cleanup();
    }
  });

  it('all attempts failing: exit 1 and a report naming the closest attempt', () => {
    const repo = sampleRepo('c-clamp');
    const script = join(repo.dir, '..', `wrong-${Date.now()}.json`);
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          [
            {
              tool_calls: [
                {
                  name: 'edit_file',
                  arguments: {
                    path: 'clamp.c',
                    old_string: 'return low;\n    return value;',
                    new_string: 'return high - 1;\n    return value;',
                  },
                },
              ],
            },
          ],
          [{ content: 'I give up' }],
        ],
      }),
    );
    try {
      const r = fix(repo.dir, ['--provider', 'host', '--issue-file', issue('c-clamp'), '--model', `replay:${script}`, '--attempts', '2']);
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.report!.status, 'not_fixed');
      assert.equal(r.report!.winner, null);
      assert.ok(r.report!.best);
      assert.equal(git(repo.dir, 'branch', '--list', 'forge/*'), '');
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  it('never runs the same tree twice: a verdict takes the run_tests of its unchanged tree, or the same change of another attempt (issue 29)', () => {
    const repo = sampleRepo('py-calc');
    const script = join(repo.dir, '..', `reuse-${Date.now()}.json`);
    const fixCall = (extra = '') => ({
      name: 'edit_file',
      arguments: {
        path: 'calc.py',
        old_string: 'return sum(values) / (len(values) + 1)',
        new_string: `return sum(values) / len(values)${extra}`,
      },
    });
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          // Tests run on the fixed tree, nothing after: that run is the verdict.
          [
            { tool_calls: [fixCall()] },
            { tool_calls: [{ name: 'run_tests', arguments: {} }] },
            { tool_calls: [{ name: 'finish', arguments: {} }] },
          ],
          // A command after the tests may change what no patch shows: judged in a cell of its own.
          [
            { tool_calls: [fixCall('  # same fix')] },
            { tool_calls: [{ name: 'run_tests', arguments: {} }] },
            { tool_calls: [{ name: 'run_command', arguments: { command: 'true' } }] },
            { tool_calls: [{ name: 'finish', arguments: {} }] },
          ],
          // Edited after its tests ran: not the tree they ran on.
          [
            { tool_calls: [{ name: 'run_tests', arguments: {} }] },
            { tool_calls: [fixCall('  # edited after the tests')] },
            { tool_calls: [{ name: 'finish', arguments: {} }] },
          ],
        ],
      }),
    );
    try {
      const r = fix(repo.dir, ['--provider', 'host', '--issue-file', issue('py-calc'), '--model', `replay:${script}`, '--attempts', '3']);
      assert.equal(r.status, 0, r.stderr);
      const [a0, a1, a2] = r.report!.attempts;
      assert.equal(a0!.verdict!.reused_from, "turn 2's run_tests (the tree is unchanged since)");
      assert.equal(a0!.verdict!.green, true);
      assert.equal(a1!.verdict!.reused_from, null);
      assert.equal(a2!.verdict!.reused_from, null);
      assert.equal(a1!.verdict!.green, true);
      assert.match(r.stderr, /attempt 0: verdict reused from turn 2's run_tests/);
      const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
      // A run_tests that starts once the baseline is known runs its failing tests first (then the
      // whole suite when they pass): whether it does depends on when the baseline ends. One run_tests here.
      const purposes = (i: number) =>
        store
          .cells(r.report!.run_id, i)
          .map((c) => (c.purpose === 'run_tests_targeted' ? 'run_tests' : c.purpose))
          .filter((p, at, all) => p !== 'run_tests' || all[at - 1] !== 'run_tests');
      assert.deepEqual(purposes(0), ['run_tests'], 'no verdict cell for an unchanged tree');
      // A verdict of its own runs the baseline's failing tests first, unless the attempt's last
      // run_tests passed them already (attempt 1): then the whole suite runs at once.
      assert.deepEqual(purposes(1), ['run_tests', 'run_command', 'verdict']);
      assert.match(r.stderr, /attempt 1: its last run_tests passed the baseline's failing tests: the whole suite runs at once/);
      assert.deepEqual(purposes(2), ['run_tests', 'verdict_targeted', 'verdict']);
      // The winner is still re-tested on a fresh checkout: ground truth is never reused.
      assert.equal(r.report!.ground_truth?.verdict?.reused_from, null);
      assert.equal(r.report!.ground_truth?.verdict?.green, true);
      // --no-reuse-verdicts: every attempt judged in a cell of its own, as before.
      const again = fix(repo.dir, [
        '--provider',
        'host',
        '--issue-file',
        issue('py-calc'),
        '--model',
        `replay:${script}`,
        '--attempts',
        '3',
        '--no-reuse-verdicts',
        '--no-failing-first',
      ]);
      assert.equal(again.status, 0, again.stderr);
      assert.ok(again.report!.attempts.every((a) => a.verdict!.reused_from === null));
      assert.deepEqual(
        store.cells(again.report!.run_id, 0).map((c) => c.purpose),
        ['run_tests', 'verdict'],
      );
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  it("failing tests first: a verdict runs the baseline's failing tests before the whole suite; an attempt on which they all fail again is red there (issue 29)", () => {
    const repo = sampleRepo('py-calc');
    const out = mkdtempSync(join(tmpdir(), 'forge-out-'));
    const script = join(repo.dir, '..', `failing-first-${Date.now()}.json`);
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          [edit('return sum(values) / len(values)'), finish],
          // Changes nothing the failing tests see: they all fail again.
          [edit('return sum(values) / (len(values) + 1)  # unchanged'), finish],
          // Integer division fixes two of the three: red too, but the whole suite judges it.
          [edit('return sum(values) // len(values)'), finish],
        ],
      }),
    );
    try {
      const args = ['--provider', 'host', '--issue-file', issue('py-calc'), '--model', `replay:${script}`, '--attempts', '3'];
      const r = fix(repo.dir, [...args, '--out', out]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(
        r.stderr,
        /failing tests first: each verdict runs the baseline's 3 failing tests \(pytest node ids\) before the whole suite/,
      );
      const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
      const purposes = (runId: string, i: number) => store.cells(runId, i).map((c) => c.purpose);
      const failing = [
        'test_calc.py::test_average_keeps_fractions',
        'test_calc.py::test_average_of_one',
        'test_calc.py::test_average_of_two',
      ];
      const a1 = r.report!.attempts[1]!.verdict!;
      assert.equal(a1.green, false);
      assert.deepEqual(a1.targeted?.tests.sort(), failing);
      assert.deepEqual(a1.targeted?.still_failing.sort(), failing);
      assert.equal(a1.targeted?.how, 'pytest node ids');
      assert.deepEqual(a1.failing.sort(), failing);
      assert.equal(a1.passed, 0, 'only the selected tests ran');
      assert.equal(a1.regressions_known, false);
      assert.match(r.stderr, /attempt 1: red in [\d.]+ s on the 3 failing tests \(all fail again: .*\); the rest of the suite not run/);
      assert.deepEqual(purposes(r.report!.run_id, 1), ['verdict_targeted']);
      // A partial fix is red as well, but the whole suite judges it (its regressions are named).
      const a2 = r.report!.attempts[2]!.verdict!;
      assert.deepEqual(purposes(r.report!.run_id, 2), ['verdict_targeted', 'verdict']);
      assert.equal(a2.targeted, null);
      assert.equal(a2.regressions_known, true);
      assert.deepEqual(a2.failing, ['test_calc.py::test_average_keeps_fractions']);
      assert.equal(a2.passed, 3);
      assert.match(
        r.stderr,
        /attempt 2: 2 of the 3 failing tests passed, 1 failed again: the whole suite decides \(one failing before and after is not the change's doing\) and names what else it changed/,
      );
      // The fix passes them: the whole suite is its verdict.
      assert.deepEqual(purposes(r.report!.run_id, 0), ['verdict_targeted', 'verdict']);
      assert.match(r.stderr, /attempt 0: the 3 failing tests passed \(targeted run, [\d.]+ s\): running the whole suite/);
      assert.ok(r.report!.winner!.attempts[0]!.endsWith('-a0'));
      assert.match(
        readFileSync(join(out, 'summary.md'), 'utf8'),
        /red \(targeted: the baseline's 3 failing test\(s\) all failed again in [\d.]+ s; the rest of the suite not run\)/,
      );
      // --no-failing-first: every verdict of its own runs the whole suite at once.
      const whole = fix(repo.dir, [...args, '--no-failing-first']);
      assert.equal(whole.status, 0, whole.stderr);
      assert.doesNotMatch(whole.stderr, /failing tests first/);
      assert.deepEqual(purposes(whole.report!.run_id, 1), ['verdict']);
      assert.equal(whole.report!.attempts[1]!.verdict!.targeted, null);
      assert.equal(whole.report!.attempts[1]!.verdict!.passed, 1);
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("failing tests first in run_tests: once the baseline is known, an attempt's run_tests on a change runs the baseline's failing tests first; all failing again, that run is what the model reads and its verdict (issue 29)", () => {
    const repo = sampleRepo('py-calc');
    const script = join(repo.dir, '..', `run-tests-first-${Date.now()}.json`);
    const runTests = { tool_calls: [{ name: 'run_tests', arguments: {} }] };
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          // Changes nothing the failing tests see: they fail again, the rest of the suite never runs for it.
          [edit('return sum(values) / (len(values) + 1)  # unchanged'), runTests, finish],
          // The fix: they pass, then the whole suite, which is its verdict.
          [edit('return sum(values) / len(values)'), runTests, finish],
          // A partial fix: some fail again, so the whole suite names what it broke.
          [edit('return sum(values) // len(values)'), runTests, finish],
        ],
      }),
    );
    try {
      const args = ['--provider', 'host', '--issue-file', issue('py-calc'), '--model', `replay:${script}`, '--attempts', '3'];
      // One cell at a time: every run_tests waits for the baseline's cell, so it starts with the baseline known.
      const r = fix(repo.dir, args, { FORGE_MAX_CELLS: '1' });
      assert.equal(r.status, 0, r.stderr);
      const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
      const runId = r.report!.run_id;
      const purposes = (i: number) => store.cells(runId, i).map((c) => c.purpose);
      assert.deepEqual(purposes(0), ['run_tests_targeted'], 'no whole suite and no verdict cell for attempt 0');
      const a0 = r.report!.attempts[0]!.verdict!;
      assert.equal(a0.green, false);
      assert.equal(a0.regressions_known, false);
      assert.deepEqual(a0.targeted?.still_failing.length, 3);
      assert.match(a0.reused_from ?? '', /^turn 2's run_tests of the baseline's failing tests/);
      assert.match(r.stderr, /attempt 0: its run_tests is red in [\d.]+ s on the baseline's 3 failing tests \(all fail again: /);
      // What the model read says that only those tests ran.
      const told = JSON.parse(store.turns(runId, 0)[1]!.tool_results_json) as { result: string }[];
      assert.match(told[0]!.result, /only the baseline's 3 failing tests ran \(pytest node ids\), and they fail again/);
      assert.match(told[0]!.result, /test_average_of_two/);
      assert.deepEqual(purposes(1), ['run_tests_targeted', 'run_tests']);
      assert.match(r.stderr, /attempt 1: its run_tests: the 3 failing tests passed \(targeted run, [\d.]+ s\): running the whole suite/);
      assert.equal(r.report!.attempts[1]!.verdict!.reused_from, "turn 2's run_tests (the tree is unchanged since)");
      assert.deepEqual(purposes(2), ['run_tests_targeted', 'run_tests']);
      assert.deepEqual(r.report!.attempts[2]!.verdict!.regressions_known, true);
      assert.ok(r.report!.winner!.attempts[0]!.endsWith('-a1'));
      assert.equal(r.report!.ground_truth?.verdict?.green, true);
      // --no-failing-first: run_tests runs the whole suite at once.
      const whole = fix(repo.dir, [...args, '--no-failing-first'], { FORGE_MAX_CELLS: '1' });
      assert.equal(whole.status, 0, whole.stderr);
      assert.deepEqual(
        store.cells(whole.report!.run_id, 0).map((c) => c.purpose),
        ['run_tests'],
      );
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  it('a run is never reused past a write the patch cannot show (an ignored file its tests read): red team of issue 29', () => {
    const repo = sampleRepo('py-calc');
    writeFileSync(join(repo.dir, '.gitignore'), 'local_settings.py\n');
    writeFileSync(join(repo.dir, 'conftest.py'), 'try:\n    import local_settings  # noqa: F401\nexcept ImportError:\n    pass\n');
    git(repo.dir, 'add', '-A');
    git(repo.dir, 'commit', '-q', '-m', 'local settings');
    const script = join(repo.dir, '..', `ignored-${Date.now()}.json`);
    const settings = (content: string) => ({ name: 'write_file', arguments: { path: 'local_settings.py', content } });
    const good = {
      name: 'edit_file',
      arguments: { path: 'calc.py', old_string: 'return sum(values) / (len(values) + 1)', new_string: 'return sum(values) / len(values)' },
    };
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          // A debugging override breaks the tests when they run; it is gone by the end: its own run is not its verdict.
          [
            { tool_calls: [settings('import calc\ncalc.average = lambda v: 0\n'), good] },
            { tool_calls: [{ name: 'run_tests', arguments: {} }] },
            { tool_calls: [settings('# removed\n')] },
            { tool_calls: [{ name: 'finish', arguments: {} }] },
          ],
          // The same patch in a worktree without the override: it takes nothing from attempt 0, nor gives.
          [{ tool_calls: [good] }, { tool_calls: [{ name: 'finish', arguments: {} }] }],
        ],
      }),
    );
    try {
      const r = fix(repo.dir, [
        '--provider',
        'host',
        '--issue-text',
        'average() is wrong',
        '--model',
        `replay:${script}`,
        '--attempts',
        '2',
      ]);
      assert.equal(r.status, 0, r.stderr);
      const [a0, a1] = r.report!.attempts;
      assert.equal(a0!.verdict!.reused_from, null);
      assert.equal(a0!.verdict!.green, true);
      assert.equal(a1!.verdict!.reused_from, null);
      assert.equal(a1!.verdict!.green, true);
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  it('a green baseline stops the run with exit 2 and a clear message', () => {
    const repo = sampleRepo('py-calc');
    try {
      const r = fix(repo.dir, ['--provider', 'host', '--issue-text', 'x', '--model', replay('py-calc'), '--test-cmd', 'true']);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /already pass on the base commit/);
    } finally {
      repo.cleanup();
    }
  });

  it('a broken environment stops the run before any attempt: exit 2, one line, report.json naming the cause and the fix', () => {
    const repo = sampleRepo('js-slug');
    const out = mkdtempSync(join(tmpdir(), 'forge-out-'));
    try {
      for (const [testCmd, cause, said] of [
        ['tape test/*.js', 'command_not_found', /tape: command not found .*install the project's dependencies/],
        [`node -e "require('left-pad')"`, 'missing_module', /a module the tests import is missing: left-pad/],
      ] as const) {
        const r = fix(repo.dir, [
          '--provider',
          'host',
          '--issue-text',
          'x',
          '--model',
          replay('js-slug'),
          '--test-cmd',
          testCmd,
          '--out',
          out,
        ]);
        assert.equal(r.status, 2, r.stderr);
        const errors = r.stderr
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('forge-runner:'));
        assert.equal(errors.length, 1, r.stderr);
        assert.match(errors[0]!, said);
        assert.equal(r.report!.status, 'broken_environment');
        assert.equal(r.report!.environment!.cause, cause);
        assert.deepEqual(r.report!.attempts, []);
        const written = FixReportSchema.parse(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')));
        assert.equal(written.environment!.cause, cause);
        assert.match(readFileSync(join(out, 'summary.md'), 'utf8'), /no attempt was judged/);
        assert.equal(git(repo.dir, 'branch', '--list', 'forge/*'), '');
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it('model keys stay in the runner even when the test command prints the whole environment', () => {
    const repo = sampleRepo('py-calc');
    const canary = `sk-ant-canary-${Date.now()}`;
    try {
      const r = fix(
        repo.dir,
        [
          '--provider',
          'host',
          '--issue-file',
          issue('py-calc'),
          '--model',
          replay('py-calc'),
          '--attempts',
          '1',
          '--test-cmd',
          'env; python3 -m pytest -q',
        ],
        { ANTHROPIC_API_KEY: canary, OPENAI_API_KEY: canary, FORGE_API_KEY: canary },
      );
      assert.equal(r.status, 0, r.stderr);
      const logs = join(process.env.FORGE_STATE_DIR!, 'cells');
      let seen = 0;
      for (const f of readdirSync(logs)) {
        const text = readFileSync(join(logs, f), 'utf8');
        if (text.includes('PYTHONDONTWRITEBYTECODE=1')) seen++;
        assert.ok(!text.includes(canary), `a model key reached cell log ${f}`);
      }
      assert.ok(seen > 0, 'no cell printed its environment: the check proved nothing');
    } finally {
      repo.cleanup();
    }
  });
});
