import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { type FixRequestInput, FixRequestSchema } from '../../../runner/src/protocol/fixRequest.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { ReplayModel } from '../../../runner/src/repair/models/replayModel.js';
import type { ReplayScript } from '../../../runner/src/repair/models/replayScript.js';
import { notResumable, runSettingsOf, storedRunSettings } from '../../../runner/src/repair/fix/prepareRun.js';
import { decideRunSetup } from '../../../runner/src/repair/fix/resolveRun.js';
import { runNetworkRefusal } from '../../../runner/src/repair/fix/runNetwork.js';
import { BrokenEnvironmentError, type FixDeps, resumeRequest, runFix } from '../../../runner/src/repair/runFix.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { type RunRow, RunStore } from '../../../runner/src/store/runStore.js';
import {
  type FakeCell,
  type FakeCellOutcome,
  FakeCellProvider,
  type FakeCellScript,
  pytestOutput,
} from '../../helpers/fakeCellProvider.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';

/**
 * The fix pipeline's decisions, in process: real git worktrees and the real tools, a replay
 * model, and cells whose results a script derives from the worktree files (no process runs).
 * fixPipeline.test.ts checks the same pipeline end to end with real cells.
 */

const BUGGY = 'def average(values):\n    return sum(values) / (len(values) + 1)\n\n\ndef total(values):\n    return sum(values)\n';
const FIX = {
  name: 'edit_file',
  arguments: { path: 'calc.py', old_string: 'return sum(values) / (len(values) + 1)', new_string: 'return sum(values) / len(values)' },
} as const;
/** Fixes average, and breaks total (which passed on the base): a regression. */
const FIX_WITH_REGRESSION = {
  name: 'edit_file',
  arguments: {
    path: 'calc.py',
    old_string: '    return sum(values) / (len(values) + 1)\n\n\ndef total(values):\n    return sum(values)',
    new_string: '    return sum(values) / len(values)\n\n\ndef total(values):\n    return 0',
  },
} as const;
const FINISH = { name: 'finish', arguments: { summary: 'done' } } as const;
const RUN_TESTS = { name: 'run_tests', arguments: {} } as const;
const TEST_CMD = 'python3 -m pytest -q';

/** pytest on calc.py as it is in the cell's worktree. */
const calcTests = (cell: FakeCell): FakeCellOutcome => {
  const calc = cell.read('calc.py') ?? '';
  return pytestOutput({
    'test_calc.py::test_average': calc.includes('return sum(values) / len(values)\n'),
    'test_calc.py::test_total': /def total\(values\):\n {4}return sum\(values\)\n/.test(calc),
  });
};
const isTestRun = (cell: FakeCell) => cell.cmd === TEST_CMD;
const ok: FakeCellOutcome = { exit_code: 0, output: '' };
const script =
  (custom: (cell: FakeCell) => FakeCellOutcome | null = () => null): FakeCellScript =>
  (cell) =>
    custom(cell) ?? (isTestRun(cell) ? calcTests(cell) : ok);

describe('fix pipeline decisions (fake cells, replay model, in process)', function () {
  let stateDir: string;
  let store: RunStore;
  let repo: { dir: string; cleanup: () => void };
  let lines: string[];

  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'forge-decisions-'));
    store = new RunStore(openStore(join(stateDir, 'forge.db')));
    repo = makeRepo({ 'calc.py': BUGGY, 'test_calc.py': 'from calc import average\n' });
    lines = [];
  });
  afterEach(() => {
    repo.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  const request = (over: Partial<FixRequestInput> = {}) =>
    FixRequestSchema.parse({ repo: repo.dir, issue: 'average is wrong', model: 'replay:fake', test_cmd: TEST_CMD, attempts: 2, ...over });
  const deps = (provider: FakeCellProvider, attempts: ReplayScript['attempts'], signal?: AbortSignal): FixDeps => ({
    store,
    provider,
    model: new ReplayModel('replay:fake', { version: 1, attempts }),
    progress: (l) => lines.push(l),
    ...(signal ? { signal } : {}),
  });
  const forgeBranches = () =>
    git(repo.dir, 'branch', '--list', 'forge/*')
      .split('\n')
      .map((b) => b.trim())
      .filter(Boolean);
  const worktrees = () => git(repo.dir, 'worktree', 'list').trim().split('\n').length;
  const purposes = (p: FakeCellProvider) => p.cells.map((c) => `${c.purpose}${c.attempt === null ? '' : `:${c.attempt}`}`);

  it('a regression-causing attempt loses to the correct one; ground truth passes; only the winner branch remains', async () => {
    const provider = new FakeCellProvider(script());
    const { report, exitCode } = await runFix(
      request(),
      deps(provider, [
        [{ tool_calls: [FIX_WITH_REGRESSION] }, { tool_calls: [FINISH] }],
        [{ tool_calls: [FIX] }, { tool_calls: [FINISH] }],
      ]),
    );
    FixReportSchema.parse(report);
    assert.equal(exitCode, 0);
    assert.equal(report.status, 'fixed');
    assert.equal(report.baseline.green, false);
    const [a0, a1] = report.attempts;
    assert.equal(a0!.verdict!.green, false, 'the attempt that broke total must be red');
    assert.deepEqual(a0!.verdict!.regressions, ['test_calc.py::test_total']);
    assert.equal(a1!.verdict!.green, true);
    assert.deepEqual(report.winner!.attempts, [`${report.run_id}-a1`]);
    assert.equal(report.ground_truth!.verdict!.green, true);
    assert.deepEqual(forgeBranches(), [report.winner!.branch]);
    assert.equal(worktrees(), 1, 'every attempt worktree is gone');
    assert.match(git(repo.dir, 'show', `${report.winner!.branch!}:calc.py`), /return sum\(values\) \/ len\(values\)\n/);
    assert.equal(git(repo.dir, 'status', '--porcelain'), '', "the user's tree is untouched");
    assert.equal(store.getRun(report.run_id)!.status, 'fixed');
    assert.equal(store.getRun(report.run_id)!.winner_attempt, 1);
    assert.equal(store.cellCount(report.run_id), provider.cells.length);
    assert.deepEqual(
      purposes(provider).filter((p) => !p.startsWith('verdict')),
      ['baseline', 'ground_truth'],
    );
    assert.deepEqual(
      purposes(provider)
        .filter((p) => p.startsWith('verdict'))
        .sort(),
      // Both pass the baseline's failing test in the targeted run first, so both run the whole suite.
      ['verdict:0', 'verdict:1', 'verdict_targeted:0', 'verdict_targeted:1'],
    );
    // Every cell of a run asks for plain output (no colour codes in logs, reports or what the model reads).
    for (const c of provider.cells) assert.deepEqual([c.spec.env?.NO_COLOR, c.spec.env?.FORCE_COLOR], ['1', '0'], c.purpose);
    // The targeted run selects through the variable the cell already sets: its report request stays, the node id comes after.
    for (const c of provider.cells.filter((x) => x.purpose === 'verdict_targeted')) {
      assert.match(c.spec.env!.PYTEST_ADDOPTS!, /^-rA --junitxml=.* 'test_calc\.py::test_average'$/);
      assert.equal(c.spec.cmd, TEST_CMD, "the user's command as it is");
    }
  });

  it('a run that needs the network on a provider whose cells cannot have it is refused before anything is recorded or runs', async () => {
    const provider = Object.assign(new FakeCellProvider(script()), {
      egressRefusal: async () => ({ why: 'these cells have no network', fix: 'use --provider docker or qemu' }),
    });
    await assert.rejects(
      runFix(request({ allow_net: ['registry.example.org'] }), deps(provider, [[{ tool_calls: [FINISH] }]])),
      (e: Error) =>
        e instanceof InputError &&
        e.message === '--allow-net registry.example.org: these cells have no network; drop --allow-net or use --provider docker or qemu',
    );
    assert.deepEqual(provider.cells, [], 'a cell ran');
    assert.deepEqual(store.listRuns(), [], 'a run was recorded');
    assert.equal(worktrees(), 1);
    // Without a need for the network the same provider runs.
    const { report } = await runFix(request(), deps(provider, [[{ tool_calls: [FIX] }, { tool_calls: [FINISH] }]]));
    assert.equal(report.status, 'fixed');
  });

  it('a green baseline is refused before any attempt is judged: the attempts that started with it are stopped', async () => {
    const provider = new FakeCellProvider(script((c) => (isTestRun(c) ? pytestOutput({ 'test_calc.py::test_average': true }) : null)));
    await assert.rejects(
      runFix(request(), deps(provider, [[{ tool_calls: [FIX] }, { tool_calls: [RUN_TESTS] }, { tool_calls: [FINISH] }]])),
      (e: Error) => e instanceof InputError && /already pass on the base commit/.test(e.message),
    );
    // The attempt may have run its own tests meanwhile; nothing judged it.
    assert.ok(
      purposes(provider).every((p) => p === 'baseline' || p === 'run_tests'),
      purposes(provider).join(' '),
    );
    const [run] = store.listRuns(10);
    assert.equal(run!.status, 'failed');
    assert.ok(
      store.attempts(run!.id).every((a) => (a.status === 'cancelled' || a.status === 'skipped') && a.verdict_json === null),
      'no attempt judged, none left running or queued',
    );
    assert.deepEqual(forgeBranches(), []);
    assert.equal(worktrees(), 1);
  });

  it('a broken environment stops the run with zero attempts, and says so in report.json', async () => {
    const out = join(stateDir, 'out');
    const provider = new FakeCellProvider(script((c) => (isTestRun(c) ? { exit_code: 127, output: 'sh: 1: pytest: not found\n' } : null)));
    await assert.rejects(runFix(request({ out_dir: out }), deps(provider, [[{ tool_calls: [FIX] }]])), (e: Error) => {
      assert.ok(e instanceof BrokenEnvironmentError, e.message);
      assert.equal(e.report.status, 'broken_environment');
      assert.equal(e.report.environment!.cause, 'command_not_found');
      assert.deepEqual(e.report.attempts, []);
      return true;
    });
    assert.deepEqual(purposes(provider), ['baseline']);
    assert.equal(FixReportSchema.parse(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'))).environment!.cause, 'command_not_found');
    assert.match(readFileSync(join(out, 'summary.md'), 'utf8'), /no attempt was judged/);
    assert.equal(worktrees(), 1);
  });

  it("a baseline the egress proxy refused says which host, and how to let it through; every cell gets the user's deny list", async () => {
    const out = join(stateDir, 'out');
    const refused = { host: 'pypi.org', port: 443, count: 2, first_at: '2026-01-01T00:00:00.000Z', refused_by: 'allow_net' as const };
    const provider = new FakeCellProvider(
      script((c) =>
        isTestRun(c) ? { exit_code: 1, output: 'ProxyError: Tunnel connection failed: 403 Forbidden\n', egress_denied: [refused] } : null,
      ),
    );
    const req = request({ out_dir: out, allow_net: ['files.example.org:443'], deny_net: ['telemetry.example.org'] });
    await assert.rejects(runFix(req, deps(provider, [[{ tool_calls: [FIX] }]])), (e: Error) => {
      assert.ok(e instanceof BrokenEnvironmentError, e.message);
      assert.equal(
        e.message,
        'the tests could not run on the base commit, so there is nothing to fix yet: the tests tried to reach pypi.org:443, which is not allowed; pass --allow-net pypi.org',
      );
      assert.equal(e.report.environment!.cause, 'network');
      assert.deepEqual(e.report.baseline.egress_denied, [{ host: 'pypi.org', port: 443, count: 2, refused_by: 'allow_net' }]);
      return true;
    });
    const baseline = provider.cells.find((c) => c.purpose === 'baseline')!;
    assert.deepEqual([baseline.spec.allow_net, baseline.spec.deny_net], [['files.example.org:443'], ['telemetry.example.org']]);
    assert.match(
      readFileSync(join(out, 'summary.md'), 'utf8'),
      /tried to reach pypi\.org:443, which is not allowed\.\n\nFix: pass --allow-net pypi\.org\./,
    );
    // A resume keeps the run's deny list with its allowlist.
    assert.deepEqual(runSettingsOf(req).deny_net, ['telemetry.example.org']);
  });

  it('a winner whose diff fails on a fresh checkout is not a fix', async () => {
    const provider = new FakeCellProvider(
      script((c) => (c.purpose === 'ground_truth' ? pytestOutput({ 'test_calc.py::test_average': false }) : null)),
    );
    const { report, exitCode } = await runFix(
      request({ attempts: 1 }),
      deps(provider, [[{ tool_calls: [FIX] }, { tool_calls: [FINISH] }]]),
    );
    assert.equal(exitCode, 1);
    assert.equal(report.status, 'not_fixed');
    assert.equal(report.attempts[0]!.verdict!.green, true, 'green in its own worktree');
    assert.equal(report.ground_truth!.applied, true);
    assert.equal(report.ground_truth!.verdict!.green, false);
    assert.equal(report.winner, null);
    assert.deepEqual(report.best!.attempts, [`${report.run_id}-a0`]);
    assert.deepEqual(forgeBranches(), [], 'no branch is kept for a fix that is not one');
    assert.equal(store.getRun(report.run_id)!.status, 'not_fixed');
  });

  it('all attempts failing: not fixed, and the report names the closest attempt', async () => {
    const provider = new FakeCellProvider(script());
    const { report, exitCode } = await runFix(
      request(),
      deps(provider, [[{ tool_calls: [FIX_WITH_REGRESSION] }], [{ content: 'I give up' }]]),
    );
    assert.equal(exitCode, 1);
    assert.equal(report.winner, null);
    assert.equal(report.ground_truth, null, 'nothing to check on a fresh checkout');
    assert.deepEqual(report.best!.attempts, [`${report.run_id}-a0`]);
    assert.deepEqual(forgeBranches(), [], lines.join('\n'));
    assert.equal(worktrees(), 1);
  });

  it('an attempt whose change could not be captured completely cannot win', async () => {
    const provider = new FakeCellProvider(
      script((c) => (c.purpose === 'verdict' && c.attempt === 0 ? { ...calcTests(c), diff: { incomplete: 'deadline' } } : null)),
    );
    // Two different changes: an attempt with the same change as another would take that one's verdict, and run no cell.
    const other = { ...FIX, arguments: { ...FIX.arguments, new_string: 'return sum(values) / len(values)\n    # fixed' } };
    const { report } = await runFix(
      request(),
      deps(provider, [
        [{ tool_calls: [FIX] }, { tool_calls: [FINISH] }],
        [{ tool_calls: [other] }, { tool_calls: [FINISH] }],
      ]),
    );
    assert.equal(report.status, 'fixed');
    assert.equal(report.attempts[0]!.status, 'failed');
    assert.match(report.attempts[0]!.error!, /could not be captured completely \(deadline\)/);
    assert.equal(report.attempts[0]!.verdict, null);
    assert.deepEqual(report.winner!.attempts, [`${report.run_id}-a1`]);
  });

  it('a failing --install-cmd stops the run with its last lines and leaves no worktree', async () => {
    const provider = new FakeCellProvider(
      script((c) => (c.purpose === 'install' ? { exit_code: 7, output: 'fetching\nno such package\n' } : null)),
    );
    await assert.rejects(
      runFix(request({ install_cmd: 'pip install nothing' }), deps(provider, [[{ tool_calls: [FIX] }]])),
      (e: Error) =>
        e instanceof InputError && /install command failed \(exit 7\): fetching \| no such package; fix --install-cmd/.test(e.message),
    );
    assert.deepEqual(purposes(provider), ['install']);
    assert.equal(worktrees(), 1, 'the install worktree was left behind');
    assert.equal(store.listRuns(10)[0]!.status, 'failed');
  });

  it('cancel mid-run: the run and the attempt it stopped are cancelled, the one never started skipped; a resume keeps the finished one and redoes the rest', async () => {
    const attempts: ReplayScript['attempts'] = [
      [{ tool_calls: [FIX] }, { tool_calls: [FINISH] }],
      [{ tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 30' } }] }, { tool_calls: [FINISH] }],
      [{ tool_calls: [FIX] }, { tool_calls: [FINISH] }],
    ];
    const abort = new AbortController();
    const provider = new FakeCellProvider(script((c) => (c.purpose === 'run_command' ? { ...ok, hang: true } : null)));
    provider.onCell = (c) => {
      if (c.purpose === 'run_command' && c.attempt === 1) abort.abort();
    };
    // One attempt at a time: attempt 0 has finished when attempt 1 is cancelled, and attempt 2 waits its turn.
    await assert.rejects(runFix(request({ concurrency: 1, attempts: 3 }), deps(provider, attempts, abort.signal)), /cancelled/);
    const [run] = store.listRuns(10);
    const runId = run!.id;
    assert.equal(run!.status, 'cancelled');
    assert.deepEqual(
      store.attempts(runId).map((a) => a.status),
      ['finished', 'cancelled', 'skipped'],
    );
    assert.ok(!provider.cells.some((c) => c.attempt === 2), 'nothing of attempt 2 ran after the cancel');
    assert.ok(!existsSync(join(repo.dir, '.git', 'forge-cells', `${runId}-a1`)), "the cancelled attempt's worktree is gone");
    assert.deepEqual(
      store.cells(runId, 1).map((c) => [c.purpose, c.killed_by]),
      [['run_command', 'cancel']],
      'the cell the cancel killed says so',
    );
    const cellsBefore = provider.cells.length;

    provider.setScript(script());
    lines = [];
    // While the resumed run works on attempt 1, attempt 2 waits in the queue again (not "skipped").
    let waiting: string[] = [];
    provider.onCell = (c) => {
      if (c.attempt === 1 && waiting.length === 0) waiting = store.attempts(runId).map((a) => a.status);
    };
    const { report } = await runFix(request({ resume_run_id: runId, allow_dirty: true, concurrency: 1 }), deps(provider, attempts));
    assert.deepEqual(waiting, ['finished', 'running', 'queued']);
    assert.equal(report.run_id, runId);
    assert.equal(report.status, 'fixed');
    // Attempt 2 made the same change as the kept attempt 0: one candidate, agreed on twice.
    assert.deepEqual(report.winner!.attempts, [`${runId}-a0`, `${runId}-a2`]);
    assert.ok(lines.includes('attempt 0: finished before the interruption, kept'), lines.join('\n'));
    assert.ok(lines.includes('baseline: kept from the interrupted run'), lines.join('\n'));
    const resumedCells = provider.cells.slice(cellsBefore);
    assert.ok(
      resumedCells.every((c) => c.attempt !== 0 && c.purpose !== 'baseline'),
      `attempt 0 or the baseline ran again: ${purposes(provider).slice(cellsBefore).join(', ')}`,
    );
    assert.deepEqual(
      [...new Set(resumedCells.filter((c) => c.purpose.startsWith('verdict')).map((c) => c.attempt))],
      [1, 2],
      'attempts 1 and 2 were redone',
    );
    assert.deepEqual(
      store.attempts(runId).map((a) => a.status),
      ['finished', 'finished', 'finished'],
    );
    assert.equal(store.getRun(runId)!.status, 'fixed');
    assert.deepEqual(forgeBranches(), [`forge/attempt/${runId}-a0`]);
    assert.equal(worktrees(), 1);
    await assert.rejects(runFix(request({ resume_run_id: runId }), deps(provider, attempts)), /already ended/);
  });

  it('a cancel during ground truth leaves the run cancelled, not "not fixed" from the killed cell', async () => {
    const abort = new AbortController();
    const provider = new FakeCellProvider(script((c) => (c.purpose === 'ground_truth' ? { ...ok, hang: true } : null)));
    provider.onCell = (c) => {
      if (c.purpose === 'ground_truth') abort.abort();
    };
    await assert.rejects(
      runFix(request({ attempts: 1 }), deps(provider, [[{ tool_calls: [FIX] }, { tool_calls: [FINISH] }]], abort.signal)),
      /cancelled/,
    );
    const [run] = store.listRuns(10);
    assert.equal(run!.status, 'cancelled');
    assert.deepEqual(
      store.attempts(run!.id).map((a) => a.status),
      ['finished'],
      'a finished attempt stays finished',
    );
    assert.equal(store.cells(run!.id).find((c) => c.purpose === 'ground_truth')?.killed_by, 'cancel');
  });

  it('which runs can be resumed: never finished, and nobody works on it', () => {
    const row = (over: Partial<RunRow>): RunRow => ({
      id: 'run-x',
      created_at: '',
      updated_at: '',
      repo: repo.dir,
      base_commit: 'abc',
      issue: 'average is wrong',
      test_cmd: TEST_CMD,
      provider: 'host',
      image: '',
      model: 'replay:x',
      attempts: 2,
      status: 'cancelled',
      winner_attempt: null,
      baseline_json: null,
      report_json: null,
      runner_pid: process.pid,
      install_cmd: null,
      review: null,
      settings_json: null,
      ...over,
    });
    const gone = () => false;
    const alive = () => true;
    assert.equal(
      notResumable(row({ status: 'cancelled', runner_pid: process.pid }), alive),
      null,
      'a cancelled run, even of a live runner',
    );
    assert.equal(notResumable(row({ status: 'interrupted' }), alive), null);
    assert.equal(notResumable(row({ status: 'running', runner_pid: 999_999 }), gone), null, 'its runner died');
    assert.match(notResumable(row({ status: 'running', runner_pid: 999_999 }), alive)!, /still in progress in runner pid 999999/);
    assert.match(notResumable(row({ status: 'running', runner_pid: process.pid }), gone)!, /in progress in this runner/);
    for (const status of ['fixed', 'not_fixed', 'failed'] as const)
      assert.match(notResumable(row({ status }), gone)!, new RegExp(`already ended \\(${status}\\)`));
    const request = resumeRequest(row({ status: 'cancelled', provider: 'docker', image: 'img:1', install_cmd: 'pip install .' }), {
      max_turns: 7,
    });
    assert.deepEqual(
      [request.provider, request.image, request.install_cmd, request.max_turns, request.allow_dirty, request.resume_run_id],
      ['docker', 'img:1', 'pip install .', 7, true, 'run-x'],
    );
    assert.throws(
      () => resumeRequest(row({ status: 'fixed' })),
      (e: Error) => e instanceof InputError && /already ended/.test(e.message),
    );
  });

  it('a resume keeps the budgets, allowlist and dependency sharing the run started with; what the caller gives wins; damaged ones fall back to defaults', () => {
    const started = FixRequestSchema.parse({
      repo: '/r',
      issue: 'x',
      model: 'replay:x',
      attempts: 2,
      max_turns: 9,
      cell_timeout_s: 120,
      allow_net: ['registry.npmjs.org'],
      shared_deps: false,
      allow_green_baseline: true,
      out_dir: '/tmp/out',
    });
    const recorded = JSON.stringify(runSettingsOf(started));
    assert.equal(JSON.parse(recorded).out_dir, undefined, 'outputs belong to each invocation');
    const row = (settings_json: string | null): RunRow => ({
      id: 'run-x',
      created_at: '',
      updated_at: '',
      repo: '/r',
      base_commit: 'abc',
      issue: 'x',
      test_cmd: 'true',
      provider: 'host',
      image: '',
      model: 'replay:x',
      attempts: 2,
      status: 'cancelled',
      winner_attempt: null,
      baseline_json: null,
      report_json: null,
      runner_pid: process.pid,
      install_cmd: null,
      review: null,
      settings_json,
    });
    const kept = FixRequestSchema.parse(resumeRequest(row(recorded)));
    assert.deepEqual(
      [kept.max_turns, kept.cell_timeout_s, kept.allow_net, kept.shared_deps, kept.allow_green_baseline],
      [9, 120, ['registry.npmjs.org'], false, true],
    );
    const overridden = FixRequestSchema.parse(resumeRequest(row(recorded), { cell_timeout_s: 3, max_turns: undefined }));
    assert.deepEqual([overridden.cell_timeout_s, overridden.max_turns], [3, 9], 'an undefined setting is "not given"');
    const older = FixRequestSchema.parse(resumeRequest(row(null)));
    assert.deepEqual([older.max_turns, older.allow_net], [30, []], 'a run recorded before settings were kept gets the defaults');
    const damaged = FixRequestSchema.parse(
      resumeRequest(row(JSON.stringify({ max_turns: -4, allow_net: ['not a host!'], cell_timeout_s: 60 }))),
    );
    assert.deepEqual([damaged.max_turns, damaged.allow_net, damaged.cell_timeout_s], [30, [], 60]);
    assert.deepEqual(storedRunSettings('{not json'), {});
    assert.deepEqual(storedRunSettings('[1]'), {});
  });
});

describe('runNetworkRefusal (pure)', () => {
  const refusal = { why: 'swarm cells have no network in this build', fix: 'use --provider docker or qemu' };
  it('refuses only a run that needs the network, naming what needs it and the way out', () => {
    assert.equal(runNetworkRefusal({ allowNet: ['a.example'], install: null }, null), null, 'a provider that can');
    assert.equal(runNetworkRefusal({ allowNet: [], install: null }, refusal), null);
    assert.equal(runNetworkRefusal({ allowNet: [], install: { hosts: [] } }, refusal), null, 'an install with no registries (make)');
    assert.equal(
      runNetworkRefusal({ allowNet: [], install: { hosts: ['registry.npmjs.org'] } }, refusal),
      '--install-cmd needs the package registries (registry.npmjs.org), but swarm cells have no network in this build; install the dependencies in your checkout (they are shared with every cell), or use --provider docker or qemu',
    );
    assert.match(
      runNetworkRefusal({ allowNet: ['a.example', 'b.example'], install: { hosts: ['x'] } }, refusal)!,
      /^--allow-net a\.example, b\.example: /,
    );
  });
});

describe('decideRunSetup: one rule for the CLI and the RPC (pure, issue 28)', () => {
  const asked = (a: { provider?: string; image?: string }) => ({ ...a, attempts: 6, howToGiveImage: 'pass --image IMG' });

  it('an image asked for or baked means docker unless a provider is named; otherwise host; four cells warmed at most', () => {
    assert.deepEqual(decideRunSetup(asked({}), null), { provider: 'host', image: undefined, prewarm: 4 });
    assert.deepEqual(decideRunSetup(asked({}), 'forge/baked:1'), { provider: 'docker', image: 'forge/baked:1', prewarm: 4 });
    assert.deepEqual(decideRunSetup(asked({ image: 'mine:2' }), 'forge/baked:1'), { provider: 'docker', image: 'mine:2', prewarm: 4 });
    assert.deepEqual(decideRunSetup(asked({ provider: 'swarm' }), 'forge/baked:1'), {
      provider: 'swarm',
      image: 'forge/baked:1',
      prewarm: 4,
    });
    // Host and qemu cells take no image: a baked one is not carried into their request.
    assert.deepEqual(decideRunSetup(asked({ provider: 'qemu' }), 'forge/baked:1'), { provider: 'qemu', image: undefined, prewarm: 4 });
    assert.equal(decideRunSetup({ ...asked({}), attempts: 2 }, null).prewarm, 2);
  });

  it("docker or swarm without an image, or a provider that does not exist, is one line in the caller's words", () => {
    assert.throws(
      () => decideRunSetup(asked({ provider: 'docker' }), null),
      (e: Error) => e instanceof InputError && e.message === 'docker cells need an image: pass --image IMG',
    );
    assert.throws(
      () => decideRunSetup(asked({ provider: 'podman' }), null),
      (e: Error) => e instanceof InputError && /^unknown provider "podman"; choose one of: host, docker, qemu, swarm$/.test(e.message),
    );
  });
});
