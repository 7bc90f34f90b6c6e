import assert from 'node:assert/strict';
import type { AttemptSnapshot, CellSnapshot, RunSummary } from '../../runner/src/protocol/rpcFix.js';
import type { HealthReport } from '../../runner/src/protocol/health.js';
import { chooseNodeRuntime, supportedNodes } from '../../extension/src/runner/nodeRuntime.js';
import { decideRestart, MAX_CRASHES_IN_WINDOW } from '../../extension/src/runner/restartPolicy.js';
import { describeApplyOutcome, parseLogUri, parseReviewUri, reviewUriParts } from '../../extension/src/review/reviewUris.js';
import { fixStartParams, runnerModelSpec } from '../../extension/src/settings.js';
import { formatStatus, modelLabel, type StatusInput } from '../../extension/src/statusText.js';
import { attemptView, cellView, duration, runView } from '../../extension/src/views/presentation.js';
import { isResumable } from '../../extension/src/forgeState.js';

const attempt = (over: Partial<AttemptSnapshot>): AttemptSnapshot => ({
  index: 0,
  attempt_id: 'r-a0',
  temperature: 0,
  status: 'finished',
  turns: 3,
  tokens: 10,
  green: true,
  passed: 4,
  failed: 0,
  diff_size: 2,
  winner: false,
  error: null,
  agrees_with: [],
  rank: null,
  reason: null,
  could_not_run: null,
  ...over,
});
const run = (over: Partial<RunSummary>): RunSummary => ({
  run_id: 'run-1',
  status: 'fixed',
  created_at: '',
  updated_at: '',
  repo: '/r',
  base_commit: 'abcdef0123456789',
  issue_title: 'average is wrong',
  test_cmd: 'pytest',
  provider: 'host',
  image: '',
  model: 'replay:x',
  attempts: 2,
  winner_attempt: 0,
  review: 'pending',
  environment: null,
  error: null,
  ending: null,
  ...over,
});
const health = (docker: boolean): HealthReport => ({
  generated_at: 'now',
  default_provider: 'host',
  providers: [
    { provider: 'host', available: true, reason: 'bwrap works', isolation: null, details: {} },
    {
      provider: 'docker',
      available: docker,
      reason: docker ? 'engine answers' : 'no Docker Engine answers on /var/run/docker.sock',
      isolation: null,
      details: {},
    },
  ],
});

describe('extension presentation and decisions (pure)', () => {
  it('attempt rows: queued, running, winner, green, red and error each look different', () => {
    const views = [
      attemptView(attempt({ status: 'queued', turns: 0, green: null })),
      attemptView(attempt({ status: 'running', turns: 1, green: null })),
      attemptView(attempt({ winner: true })),
      attemptView(attempt({})),
      attemptView(attempt({ green: false, passed: 3, failed: 1 })),
      attemptView(attempt({ status: 'failed', error: 'model endpoint answered 500', green: null })),
    ];
    assert.deepEqual(
      views.map((v) => v.icon),
      ['circle-outline', 'sync~spin', 'star-full', 'pass', 'error', 'error'],
    );
    assert.deepEqual(
      views.map((v) => v.description),
      [
        'queued',
        'running · 1 turn',
        'winner · 3 turns · 2 lines',
        'green · 3 turns · 2 lines',
        'red · 3 turns · 2 lines',
        'error · 3 turns',
      ],
    );
    assert.equal(views[2]!.contextValue, 'attempt.winner');
    assert.match(views[4]!.tooltip, /3 passed, 1 failed/);
    assert.match(views[5]!.tooltip, /answered 500/);
  });

  it('an attempt green only on the tests it fixed is "green so far", not a pass, until its run is judged (issue 31)', () => {
    const v = attemptView(attempt({ provisional: true, failed: 1, failing_before: ['test_mul'], diff_lines: { added: 1, removed: 1 } }));
    assert.deepEqual([v.icon, v.color, v.description], ['pass', null, 'green so far · 3 turns · +1 −1']);
    assert.match(v.tooltip, /1 still failing as on the base commit: test_mul/);
    assert.match(v.tooltip, /if another attempt makes one of the tests still failing here pass, this one is red/);
    assert.doesNotMatch(v.tooltip, /not caused by this change/);
    const held = attemptView(attempt({ failed: 1, failing_before: ['test_mul'], diff_lines: { added: 1, removed: 1 } }));
    assert.deepEqual([held.color, held.description], ['testing.iconPassed', 'green · 3 turns · +1 −1']);
    assert.match(held.tooltip, /failing before and after, not caused by this change: test_mul/);
  });

  it('an attempt whose cell waits behind other runs\' cells says so and where it stands, not "running"', () => {
    const waiting = attemptView(attempt({ status: 'running', turns: 1, green: null, waiting_for_cell: 3 }));
    assert.deepEqual([waiting.icon, waiting.description], ['watch', 'waiting for a cell (3 ahead) · 1 turn']);
    // Once it finished, a stale count is no state of it.
    assert.equal(attemptView(attempt({ winner: true, waiting_for_cell: 2 })).description, 'winner · 3 turns · 2 lines');
  });

  it('attempts a cancel stopped or never started are grey, not queued forever or red', () => {
    const cancelled = attemptView(attempt({ status: 'cancelled', turns: 2, green: null, passed: null, failed: null }));
    const skipped = attemptView(attempt({ status: 'skipped', turns: 0, green: null, passed: null, failed: null }));
    assert.deepEqual([cancelled.icon, cancelled.color, cancelled.description], ['debug-stop', 'disabledForeground', 'cancelled · 2 turns']);
    assert.deepEqual([skipped.icon, skipped.color, skipped.description], ['debug-step-over', 'disabledForeground', 'skipped']);
    assert.match(skipped.tooltip, /: skipped$/);
  });

  it('an attempt whose runner died mid-way is shown interrupted (a warning, as its run), never spinning as running', () => {
    const a = attemptView(attempt({ status: 'interrupted', turns: 2, green: null, passed: null, failed: null }));
    assert.deepEqual([a.icon, a.color, a.description], ['debug-pause', 'editorWarning.foreground', 'interrupted · 2 turns']);
  });

  it('a cancelled run is grey and offers Resume (run.cancelled); an interrupted one stays a warning', () => {
    const cancelled = runView(run({ status: 'cancelled', review: null, winner_attempt: null, error: null }));
    assert.deepEqual(
      [cancelled.icon, cancelled.color, cancelled.description, cancelled.contextValue],
      ['debug-stop', 'disabledForeground', 'cancelled · 2 on host', 'run.cancelled'],
    );
    assert.equal(runView(run({ status: 'interrupted', review: null })).contextValue, 'run.interrupted');
    assert.deepEqual(
      ['running', 'fixed', 'not_fixed', 'failed', 'interrupted', 'cancelled'].map((status) => isResumable({ status } as RunSummary)),
      [false, false, false, false, true, true],
    );
  });

  it('run rows carry a context value the menus match on', () => {
    assert.equal(runView(run({})).contextValue, 'run.fixed.pending');
    assert.equal(runView(run({ review: 'applied' })).contextValue, 'run.fixed.applied');
    assert.equal(runView(run({ status: 'running', review: null })).contextValue, 'run.running');
    assert.equal(runView(run({ status: 'not_fixed', review: null })).contextValue, 'run.not_fixed');
    assert.match(runView(run({ status: 'failed', review: null, error: 'the tests already pass' })).tooltip, /already pass/);
  });

  it('a run with a part of an attempt applied says so, and an applied run offers no attempt to apply (issue 31 drive)', () => {
    const part = runView(run({ applied_part: { attempt: 2, files: ['calc.py'] } }));
    assert.match(part.description, /fixed · partly applied/);
    assert.match(part.tooltip, /part of attempt 2 is in your checkout \(calc\.py\); Undo Apply takes it back/);
    assert.equal(part.contextValue, 'run.fixed.pending.part', 'Apply and Discard stay offered, and Undo Apply (menus match the prefix)');
    assert.match(runView(run({ review: 'applied', applied_part: { attempt: 2, files: ['calc.py'] } })).description, /fixed · applied/);
    // Another attempt than the winner applied (the user chose it after a warning): said in the row (drive 4).
    const other = runView(run({ review: 'applied', winner_attempt: 1, applied_attempt: 0 }));
    assert.match(other.description, /fixed · applied attempt 0, not the winner/);
    assert.match(other.tooltip, /attempt 0 is in your checkout, not the winner \(attempt 1\)/);
    assert.match(runView(run({ review: 'applied', winner_attempt: 1, applied_attempt: 1 })).description, /fixed · applied ·/);
    assert.equal(attemptView(attempt({ winner: true }), true, true).contextValue, 'attempt.winner.closed');
    assert.equal(attemptView(attempt({}), true, false).contextValue, 'attempt.changed.comparable');
  });

  it('cell rows: provider, image, duration, exit code; running cells have no log yet', () => {
    const c: CellSnapshot = {
      cell_id: 'c1',
      run_id: 'run-1',
      attempt_index: 1,
      purpose: 'verdict',
      provider: 'docker',
      image: 'py:1',
      command: 'pytest',
      running: false,
      exit_code: 1,
      killed_by: null,
      duration_ms: 2500,
      started_at: '',
    };
    assert.deepEqual(
      [cellView(c).label, cellView(c).description, cellView(c).icon],
      ['verdict · attempt 1', 'docker py:1 · 2.5 s · exit 1', 'error'],
    );
    assert.equal(cellView({ ...c, exit_code: 137, killed_by: 'timeout' }).description, 'docker py:1 · 2.5 s · exit 137 (timeout)');
    assert.equal(cellView({ ...c, running: true, exit_code: null, duration_ms: null }).contextValue, 'cell.running');
    // Killed by the run's cancel: grey and said so, not a red exit 137.
    const stopped = cellView({ ...c, purpose: 'baseline', attempt_index: null, exit_code: 137, killed_by: 'cancel' });
    assert.deepEqual(
      [stopped.description, stopped.icon, stopped.color, stopped.contextValue],
      ['docker py:1 · 2.5 s · cancelled', 'debug-stop', 'disabledForeground', 'cell'],
    );
    assert.match(stopped.tooltip, /stopped by the run's cancel \(exit 137\)/);
    assert.equal(cellView({ ...c, exit_code: 137, killed_by: 'signal' }).icon, 'error', 'any other kill is still a failure');
    // Not verdicts: the baseline's failing tests are the issue, an agent's own test run is a step of its work (issue 31 drive).
    const baseline = cellView({ ...c, purpose: 'baseline', attempt_index: null });
    assert.deepEqual([baseline.icon, baseline.color], ['beaker', null]);
    assert.match(baseline.tooltip, /expected before a fix/);
    assert.deepEqual([cellView({ ...c, purpose: 'run_tests' }).icon, cellView({ ...c, purpose: 'run_tests' }).color], ['terminal', null]);
    assert.equal(cellView({ ...c, purpose: 'baseline', exit_code: 0 }).icon, 'pass');
    assert.deepEqual(
      [cellView({ ...c, purpose: 'verdict_targeted' }).icon, cellView({ ...c, purpose: 'run_tests_targeted' }).icon],
      ['filter', 'terminal'],
    );
    assert.equal(cellView({ ...c, purpose: 'verdict_retry' }).icon, 'error', 'a whole-suite verdict exiting 1 is red');
    assert.deepEqual([duration(999), duration(61_000)], ['999 ms', '1 min 1 s']);
  });

  it('status bar: the chosen provider and model, cells running; degraded when the chosen provider is down or the runner is', () => {
    const st = (over: Partial<StatusInput>) =>
      formatStatus({ health: health(true), running: 0, provider: 'docker', model: 'openai:gpt-4o', runnerState: 'ready', ...over });
    assert.deepEqual([st({ running: 2 }).text, st({ running: 2 }).degraded], ['$(beaker) Forge: docker ✓ · gpt-4o · 2 cells', false]);
    const down = st({ health: health(false), running: 1 });
    assert.equal(down.text, '$(warning) Forge: docker ✗ · gpt-4o · 1 cell');
    assert.equal(down.degraded, true);
    assert.match(down.tooltip, /^cells run on: docker: unavailable: no Docker Engine answers/);
    assert.match(down.tooltip, /model: openai:gpt-4o/);
    assert.deepEqual(
      [st({ runnerState: 'down' }).degraded, st({ runnerState: 'down' }).text],
      [true, '$(warning) Forge: runner not started · gpt-4o'],
    );
    assert.equal(st({ health: null }).text, '$(beaker) Forge: docker · gpt-4o · checking…');
  });

  it("status bar: another provider's failure is not shown to a user who chose host", () => {
    const view = formatStatus({ health: health(false), running: 0, provider: 'host', model: 'vscode-lm', runnerState: 'ready' });
    assert.equal(view.text, '$(beaker) Forge: host ✓ · VS Code model');
    assert.equal(view.degraded, false, 'an unused provider being down is not a warning');
    assert.doesNotMatch(view.text + view.tooltip, /docker/, 'Show Cell Health lists the other providers, the status bar does not');
  });

  it('status bar: the model in a few words, whatever forge.model holds', () => {
    assert.deepEqual(
      ['openai:gpt-4o', 'anthropic:claude-sonnet-4-5', 'vscode-lm', 'vscode-lm:gpt-4o', 'replay:/r/.forge/replay.json', '', 'openai'].map(
        modelLabel,
      ),
      ['gpt-4o', 'claude-sonnet-4-5', 'VS Code model', 'gpt-4o (VS Code)', 'replay', 'no model', 'openai'],
    );
    const none = formatStatus({ health: health(true), running: 0, provider: 'host', model: ' ', runnerState: 'ready' });
    assert.equal(none.text, '$(beaker) Forge: host ✓ · $(warning) no model', 'no model yet is flagged');
    assert.match(none.tooltip, /model: none chosen yet \(set forge.model, or run "Forge: Get Started"\)/);
  });

  it('restart policy: backoff doubles to a cap, then gives up after repeated crashes in the window', () => {
    const now = 1_000_000;
    assert.deepEqual(decideRestart([now], now), { restart: true, delayMs: 500, recentCrashes: 1 });
    assert.equal(decideRestart([now - 2000, now - 1000, now], now).delayMs, 2000);
    const many = Array.from({ length: MAX_CRASHES_IN_WINDOW }, (_, i) => now - i * 1000);
    assert.equal(decideRestart(many, now).restart, false);
    assert.equal(decideRestart(many.map((t) => t - 10 * 60_000).concat(now), now).restart, true, 'old crashes do not count');
  });

  it('node runtime: the setting is checked, else a plain-Node host, else node on PATH; any shipped ABI fits; a mismatch names the fix', () => {
    const want = {
      abis: [
        { modules: '115', node: '20' },
        { modules: '127', node: '22' },
        { modules: '137', node: '24' },
      ],
      platform: 'linux',
      arch: 'x64',
    };
    assert.equal(supportedNodes(want), 'Node 20, 22 or 24');
    assert.equal(supportedNodes({ ...want, abis: want.abis.slice(0, 1) }), 'Node 20');
    assert.deepEqual(chooseNodeRuntime(want, [{ source: 'extension-host', path: '/n20', modules: '115', version: '20.1.0' }]), {
      ok: true,
      path: '/n20',
      source: 'extension-host',
    });
    for (const [modules, version] of [
      ['115', '20.2.0'],
      ['127', '22.12.0'],
      ['137', '24.1.0'],
    ] as const)
      assert.deepEqual(chooseNodeRuntime(want, [{ source: 'path', path: 'node', modules, version }]), {
        ok: true,
        path: 'node',
        source: 'path',
      });
    assert.deepEqual(
      chooseNodeRuntime(want, [
        { source: 'extension-host', path: '/n18', modules: '108', version: '18.0.0' },
        { source: 'path', path: 'node', modules: '127', version: '22.12.0' },
      ]),
      { ok: true, path: 'node', source: 'path' },
    );
    assert.deepEqual(chooseNodeRuntime(want, [{ source: 'setting', path: '/n24', modules: '137', version: '24.1.0' }]), {
      ok: true,
      path: '/n24',
      source: 'setting',
    });
    const wrongSetting = chooseNodeRuntime(want, [
      { source: 'setting', path: '/n26', modules: '147', version: '26.0.0' },
      { source: 'path', path: 'node', modules: '115', version: '20.2.0' },
    ]);
    assert.equal(wrongSetting.ok, false);
    assert.match(
      (wrongSetting as { message: string }).message,
      /forge\.runner\.nodePath is \/n26, but it is Node 26\.0\.0 \(ABI 147\); the runner needs Node 20, 22 or 24 \(ABI 115, 127, 137\)/,
    );
    const none = chooseNodeRuntime(want, [{ source: 'path', path: 'node', modules: null, version: null, error: 'ENOENT' }]);
    assert.match(
      (none as { message: string }).message,
      /no Node\.js runtime for the Forge runner: it needs Node 20, 22 or 24 \(ABI 115, 127, 137\); found node: not runnable.*set forge\.runner\.nodePath/,
    );
  });

  it('settings: model specs and fix/start params', () => {
    assert.deepEqual(runnerModelSpec('replay:issue/replay.json', '/ws'), { spec: 'replay:/ws/issue/replay.json', lmFamily: null });
    assert.deepEqual(runnerModelSpec('vscode-lm:gpt-4o', '/ws'), { spec: 'client:vscode-lm', lmFamily: 'gpt-4o' });
    assert.deepEqual(runnerModelSpec('anthropic:claude', '/ws'), { spec: 'anthropic:claude', lmFamily: null });
    assert.throws(() => runnerModelSpec('', '/ws'), /forge\.model is empty/);
    assert.throws(() => runnerModelSpec('gpt5', '/ws'), /is not a model/);
    assert.deepEqual(
      fixStartParams(
        { attempts: 100, provider: 'docker', image: ' img ', testCommand: '', model: '', maxTurns: 0, cellTimeout: Number.NaN },
        '/r',
        'i',
        'm',
      ),
      { repo: '/r', issue: 'i', model: 'm', attempts: 64, provider: 'docker', image: 'img', max_turns: 1, cell_timeout_s: 300 },
    );
    const strict = fixStartParams(
      { attempts: 3, provider: 'host', image: '', testCommand: '', model: '', maxTurns: 30, cellTimeout: 300, strict: true },
      '/r',
      'i',
      'm',
    );
    assert.equal(strict.strict, true);
    // Budgets: per attempt and per run, whole numbers; 0 (or nonsense) leaves them to the runner.
    const budgets = (maxTokens: number, maxRunTokens: number) =>
      fixStartParams(
        { attempts: 3, provider: 'host', image: '', testCommand: '', model: '', maxTurns: 30, cellTimeout: 300, maxTokens, maxRunTokens },
        '/r',
        'i',
        'm',
      );
    assert.deepEqual([budgets(5000.7, 20000).max_tokens, budgets(5000.7, 20000).max_run_tokens], [5000, 20000]);
    assert.deepEqual([budgets(0, Number.NaN).max_tokens, budgets(-3, 0).max_run_tokens], [undefined, undefined]);
  });

  it('an attempt green with a test failing before and after says so in its tooltip', () => {
    const v = attemptView(attempt({ passed: 6, failed: 1, failing_before: ['tests/test_meta.py::test_has_version'] }));
    assert.match(v.description, /^green/);
    assert.match(
      v.tooltip,
      /6 passed, 1 failed \(1 failing before and after, not caused by this change: tests\/test_meta\.py::test_has_version\)/,
    );
  });

  it('review URIs round-trip; apply outcomes name every conflicting file', () => {
    const parts = reviewUriParts({ runId: 'run-1', side: 'attempt', path: 'src/a b.py' });
    assert.deepEqual(parseReviewUri(parts.path, parts.query), { runId: 'run-1', side: 'attempt', path: 'src/a b.py' });
    assert.equal(parseReviewUri('/x', 'run=r&side=evil'), null);
    assert.deepEqual(parseLogUri('run=r&cell=c'), { runId: 'r', cellId: 'c' });
    assert.match(
      describeApplyOutcome(false, '/r', [
        { path: 'a.py', ok: true, reason: null },
        { path: 'b.py', ok: false, reason: 'patch does not apply' },
      ]),
      /^Nothing was applied: 1 of 2 file\(s\) conflict.*b\.py \(patch does not apply\)/,
    );
    assert.equal(describeApplyOutcome(true, '/r', [{ path: 'a.py', ok: true, reason: null }]), 'Applied the winner to /r: a.py.');
  });
});

describe('an attempt whose tests could not run (issue 27)', () => {
  it('is shown as such, with why, not as red', () => {
    const v = attemptView(
      attempt({ green: false, failed: 1, passed: 0, could_not_run: 'out of memory', reason: 'its tests could not run: out of memory' }),
    );
    assert.match(v.description, /^could not run/);
    assert.match(v.tooltip, /its tests could not run: out of memory/);
    assert.doesNotMatch(v.tooltip, /passed|failed|ranked/, 'a runner that died gave no counts and has no place');
    const red = attemptView(attempt({ green: false, failed: 1, reason: 'it broke "adds", which passed before' }));
    assert.match(red.description, /^red/);
    assert.match(red.tooltip, /it broke "adds", which passed before/);
  });
});
