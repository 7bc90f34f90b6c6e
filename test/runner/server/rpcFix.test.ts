import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { ModelReplyRequestSchema, RPC_FIX_METHODS, RPC_FIX_NOTIFICATIONS, type RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import { git } from '../../helpers/gitRepo.js';
import { SAMPLES, sampleRepo } from '../../helpers/sampleRepo.js';
import { waitFor } from '../../helpers/waitFor.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const ISSUE = readFileSync(join(SAMPLES, 'py-calc', 'issue.md'), 'utf8');
const REPLAY = JSON.parse(readFileSync(join(SAMPLES, 'py-calc', 'replay.json'), 'utf8')) as {
  attempts: { tool_calls?: { name: string; arguments: unknown }[] }[][];
};

type Finished = { run_id: string; status: string; error: string | null };

describe('forge-runner serve --stdio: Fix Issue in Cells over JSON-RPC', function () {
  this.timeout(240_000);
  let state: string;
  let child: ChildProcessWithoutNullStreams;
  let rpc: MessageConnection;
  let stderr = '';
  const progress: { run_id: string; line: string }[] = [];
  const snapshots: RunSnapshot[] = [];
  const runningSeen: number[] = [];
  const finished: Finished[] = [];
  const repos: { cleanup: () => void }[] = [];
  const call = <M extends keyof typeof RPC_FIX_METHODS>(method: M, params: unknown) =>
    rpc
      .sendRequest(method, params)
      .then((r) => RPC_FIX_METHODS[method].result.parse(r) as ReturnType<(typeof RPC_FIX_METHODS)[M]['result']['parse']>);
  const waitFinished = (runId: string) => waitFor(() => finished.find((f) => f.run_id === runId), 200_000);
  const repo = (name: string) => {
    const r = sampleRepo(name);
    repos.push(r);
    return r.dir;
  };

  before(() => {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
    state = mkdtempSync(join(tmpdir(), 'forge-rpcfix-'));
    child = spawn(process.execPath, [RUNNER, 'serve', '--stdio'], {
      env: { ...process.env, FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '' },
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    rpc.onNotification('fix/progress', (p: unknown) => {
      progress.push(RPC_FIX_NOTIFICATIONS['fix/progress'].parse(p));
    });
    rpc.onNotification('runs/changed', (p: unknown) => {
      snapshots.push(RPC_FIX_NOTIFICATIONS['runs/changed'].parse(p));
    });
    rpc.onNotification('cells/changed', (p: unknown) => {
      runningSeen.push(RPC_FIX_NOTIFICATIONS['cells/changed'].parse(p).running.length);
    });
    rpc.onNotification('fix/finished', (p: unknown) => {
      finished.push(RPC_FIX_NOTIFICATIONS['fix/finished'].parse(p));
    });
    // The client-side model (what VS Code's language model does in the extension): answers from the replay script.
    rpc.onRequest('model/reply', (raw: unknown): unknown => {
      const req = ModelReplyRequestSchema.parse(raw);
      assert.ok(
        req.tools.some((t) => t.name === 'edit_file'),
        'the client is told which tools exist',
      );
      if (req.attempt_index === 1) {
        // Hostile model output: a path outside the worktree must be refused by the runner's tools.
        if (req.turn_index === 0)
          return { content: null, tool_calls: [{ id: 'x', name: 'read_file', arguments: { path: '../../../../etc/passwd' } }], tokens: 3 };
        return { content: 'giving up', tool_calls: [], tokens: 1 };
      }
      const turn = REPLAY.attempts[0]![req.turn_index];
      if (!turn?.tool_calls) return { content: 'done', tool_calls: [], tokens: 1 };
      return {
        content: null,
        tool_calls: turn.tool_calls.map((c, i) => ({ id: `c${i}`, name: c.name, arguments: c.arguments })),
        tokens: 7,
      };
    });
    rpc.listen();
  });
  after(async () => {
    rpc.dispose();
    child.stdin.end();
    await new Promise((r) => child.once('exit', r));
    rmSync(state, { recursive: true, force: true });
    for (const r of repos) r.cleanup();
  });

  it('bad fix/start params are refused with one line and nothing is recorded', async () => {
    await assert.rejects(
      rpc.sendRequest('fix/start', { repo: '/tmp', issue: 'x', model: 'replay:x', attempts: 0 }),
      (e: { code: number; message: string }) => e.code === -32602 && /attempts/.test(e.message),
    );
    await assert.rejects(rpc.sendRequest('fix/start', { repo: '/tmp', model: 'replay:x' }), /issue/);
    await assert.rejects(
      rpc.sendRequest('fix/start', { repo: state, issue: 'x', model: `replay:${join(SAMPLES, 'py-calc', 'replay.json')}` }),
      /not a git repository|git/i,
    );
    await assert.rejects(rpc.sendRequest('fix/start', { repo: repo('py-calc'), issue: 'x', model: 'client:copilot' }), /client:vscode-lm/);
    await assert.rejects(rpc.sendRequest('review/content', { run_id: '../../x', path: 'a', side: 'base' }), /run_id/);
    assert.deepEqual(await call('runs/list', {}), []);
  });

  let runId = '';
  let dir = '';
  it('fix/start answers with the run id at once; progress, snapshots and running cells are pushed until it is fixed', async () => {
    dir = repo('py-calc');
    const started = await call('fix/start', {
      repo: dir,
      issue: ISSUE,
      model: `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
      attempts: 4,
      provider: 'host',
    });
    runId = started.run_id;
    const done = await waitFinished(runId);
    assert.equal(done.status, 'fixed', stderr);
    assert.ok(progress.some((p) => p.run_id === runId && /baseline/.test(p.line)));
    assert.ok(Math.max(...runningSeen) >= 1, 'running cells were pushed');
    assert.equal(runningSeen.at(-1), 0, 'no cell is left running');
    const mine = snapshots.filter((s) => s.run.run_id === runId);
    assert.ok(
      mine.some((s) => s.attempts.some((a) => a.status === 'running')),
      'a snapshot showed an attempt running',
    );
    assert.ok(
      mine.some((s) => s.cells.some((c) => c.running)),
      'a snapshot showed a running cell',
    );
    const last = mine.at(-1)!;
    assert.equal(last.run.status, 'fixed');
    assert.equal(last.run.review, 'pending');
  });

  it('runs/show and attempts/details come from the store: verdicts, winner, turns, cells and their logs', async () => {
    const snap = await call('runs/show', { run_id: runId });
    assert.equal(snap.attempts.length, 4);
    const winner = snap.attempts.find((a) => a.winner)!;
    assert.ok(winner.green && winner.diff_size > 0 && winner.turns > 0);
    assert.ok(
      snap.attempts.some((a) => a.green === false),
      'the wrong candidate is red',
    );
    // Verdicts of their own run the baseline's failing tests first (verdict_targeted), then, for those that pass them, the whole suite.
    // A ground truth started early that selection did not need, or that gave its core to another cell, is recorded stopped.
    assert.deepEqual(
      // A run_tests that starts once the baseline is known runs the failing tests first too (run_tests_targeted): timing.
      [...new Set(snap.cells.map((c) => c.purpose).filter((p) => p !== 'ground_truth_stopped' && p !== 'run_tests_targeted'))].sort(),
      ['baseline', 'ground_truth', 'run_tests', 'verdict', 'verdict_targeted'].sort(),
    );
    assert.ok(snap.cells.every((c) => !c.running && c.provider === 'host' && c.exit_code !== null));
    const baseline = snap.cells.find((c) => c.purpose === 'baseline')!;
    assert.notEqual(baseline.exit_code, 0);
    const log = await call('cells/log', { run_id: runId, cell_id: baseline.cell_id });
    assert.match(log.log, /failed|FAILED|assert/);
    // The sample's replay: attempts 0 and 2 make the same fix, 3 a larger green one, 1 a red one.
    assert.deepEqual(
      snap.attempts.map((a) => [a.index, a.agrees_with, a.rank]),
      [
        [0, [2], 1],
        [1, [], 3],
        [2, [0], 1],
        [3, [], 2],
      ],
    );
    assert.match(snap.ranking[0]!, /^Ranked: green first/);
    assert.match(snap.ranking[1]!, /^won: attempts 0, 2 \(2 agree: the same change\): green \(\d+ passed\), 2 lines added or removed/);
    assert.match(snap.ranking[2]!, /^#2: attempt 3: green/);
    assert.match(snap.ranking[3]!, /^#3: attempt 1: red \(\d+ failing/);
    const details = await call('attempts/details', { run_id: runId, index: winner.index });
    assert.deepEqual(details.ranking, snap.ranking);
    assert.equal(details.verdict?.green, true);
    assert.ok(details.turns.some((t) => t.tool_calls.some((c) => c.tool === 'edit_file')));
    // Its own cells, and when its verdict was another attempt's with the same change, that attempt's verdict cells (its logs).
    const source = /^attempt (\d+)'s verdict \(the same change\)$/.exec(details.verdict?.reused_from ?? '')?.[1];
    assert.ok(
      details.cells.some((c) => c.purpose === 'verdict' || c.purpose === 'run_tests'),
      JSON.stringify(details.cells.map((c) => [c.attempt_index, c.purpose])),
    );
    assert.ok(
      details.cells.every(
        (c) => c.attempt_index === winner.index || (String(c.attempt_index) === source && c.purpose.startsWith('verdict')),
      ),
    );
    await assert.rejects(call('cells/log', { run_id: runId, cell_id: 'nope' }), /no cell nope/);
    const list = await call('runs/list', { limit: 5 });
    assert.equal(list[0]?.run_id, runId);
    assert.match(list[0]!.issue_title, /average/i);
  });

  it('review: the changed files with both sides; only those files can be read', async () => {
    const files = await call('review/files', { run_id: runId });
    assert.deepEqual(files.files, [{ path: 'calc.py', status: 'modified' }]);
    const base = await call('review/content', { run_id: runId, path: 'calc.py', side: 'base' });
    const mine = await call('review/content', { run_id: runId, path: 'calc.py', side: 'attempt' });
    assert.match(base.content!, /len\(values\) \+ 1/);
    assert.doesNotMatch(mine.content!, /len\(values\) \+ 1/);
    await assert.rejects(call('review/content', { run_id: runId, path: '../../../etc/passwd', side: 'base' }), /not one of the files/);
    await assert.rejects(call('review/content', { run_id: runId, path: 'test_calc.py', side: 'attempt' }), /not one of the files/);
    // Any finished attempt, from its stored patch (its worktree and branch are long gone).
    const third = await call('review/files', { run_id: runId, attempt: 3 });
    assert.equal(third.attempt, 3);
    assert.deepEqual(third.files, [{ path: 'calc.py', status: 'modified' }]);
    const thirdSide = await call('review/content', { run_id: runId, attempt: 3, path: 'calc.py', side: 'attempt' });
    assert.match(thirdSide.content!, /raise ValueError/);
    assert.equal((await call('review/content', { run_id: runId, attempt: 3, path: 'calc.py', side: 'base' })).content, base.content);
    assert.equal((await call('review/files', { run_id: runId })).attempt, 0, 'the winner by default');
    await assert.rejects(call('review/files', { run_id: runId, attempt: 9 }), /has no attempt 9/);
    await assert.rejects(call('review/files', { run_id: runId, attempt: 64 }), /attempt/);
    assert.equal(git(dir, 'status', '--porcelain').trim(), '', 'reviewing writes nothing to the working tree');
  });

  it('apply writes a chosen attempt to the working tree once and removes the winner branch; discard finds nothing more', async () => {
    assert.notEqual(git(dir, 'branch', '--list', 'forge/attempt/*').trim(), '', 'the winner branch exists before apply');
    const applied = await call('review/apply', { run_id: runId, attempt: 3 });
    assert.equal(applied.applied, true);
    assert.equal(applied.attempt, 3);
    assert.deepEqual(applied.files, [{ path: 'calc.py', ok: true, reason: null }]);
    assert.match(applied.branch_removed ?? '', /^forge\/attempt\/run-.*-a0$/);
    assert.match(readFileSync(join(dir, 'calc.py'), 'utf8'), /raise ValueError/);
    assert.equal(git(dir, 'branch', '--list', 'forge/attempt/*').trim(), '');
    await assert.rejects(call('review/apply', { run_id: runId }), /already applied/);
    assert.equal((await call('runs/show', { run_id: runId })).run.review, 'applied');
    const discarded = await call('review/discard', { run_id: runId });
    assert.ok(!discarded.removed.some((r) => r.startsWith('branch ')), JSON.stringify(discarded));
    assert.equal((await call('runs/show', { run_id: runId })).run.review, 'applied', 'an applied run stays applied');
  });

  it('a client-side model (model/reply requests) drives attempts; a hostile path from it is refused by the tools', async () => {
    const d = repo('py-calc');
    const { run_id } = await call('fix/start', { repo: d, issue: ISSUE, model: 'client:vscode-lm', attempts: 2, provider: 'host' });
    const done = await waitFinished(run_id);
    assert.equal(done.status, 'fixed', stderr);
    const hostile = await call('attempts/details', { run_id, index: 1 });
    const read = hostile.turns[0]!.tool_calls[0]!;
    assert.equal(read.tool, 'read_file');
    assert.match(read.result, /outside|escape|not allowed|refused/i);
    assert.doesNotMatch(read.result, /root:x:0:0/);
    await call('review/discard', { run_id });
    assert.equal(git(d, 'branch', '--list', 'forge/attempt/*').trim(), '');
  });

  it('cells/health reports every provider; cells/gc cleans a repo and says what it left', async () => {
    const health = await call('cells/health', {});
    assert.deepEqual(health.providers.map((p) => p.provider).sort(), ['docker', 'host', 'qemu', 'swarm']);
    assert.equal(health.providers.find((p) => p.provider === 'host')?.available, true);
    const gc = await call('cells/gc', { repo: dir });
    assert.ok(Array.isArray(gc.items) && Array.isArray(gc.notes));
    assert.ok(
      gc.items.every((i) => i.action === 'left' || i.action === 'removed'),
      JSON.stringify(gc.items),
    );
    await assert.rejects(call('cells/gc', { repo: state }), /not a git repository|git/i);
  });

  it('fix/check names what would stop a run before it starts; untracked files are only counted; repo/stash clears tracked changes', async () => {
    const notRepo = await call('fix/check', { repo: state });
    assert.equal(notRepo.repo, null);
    assert.deepEqual(
      notRepo.problems.map((p) => p.code),
      ['not_a_repository'],
    );
    const d = repo('py-calc');
    const clean = await call('fix/check', { repo: d });
    assert.deepEqual(clean.problems, []);
    assert.match(clean.test_cmd ?? '', /pytest|unittest/);
    // What a new user has: an edited tracked file, a new untracked settings file.
    writeFileSync(join(d, 'calc.py'), '# work in progress\n');
    mkdirSync(join(d, '.vscode'));
    writeFileSync(join(d, '.vscode', 'settings.json'), '{}\n');
    const dirty = await call('fix/check', { repo: d });
    assert.deepEqual(
      dirty.problems.map((p) => [p.code, p.paths]),
      [['tracked_changes', ['calc.py']]],
    );
    assert.deepEqual(dirty.untracked, { count: 1, sample: ['.vscode/settings.json'] });
    const noTests = await call('fix/check', { repo: d, test_cmd: '  ' });
    assert.ok(noTests.problems.some((p) => p.code === 'tracked_changes'));
    const stash = await call('repo/stash', { repo: d });
    assert.equal(stash.stashed, true, stash.message);
    assert.match(git(d, 'stash', 'list'), /forge: before a fix run/);
    assert.notEqual(readFileSync(join(d, 'calc.py'), 'utf8'), '# work in progress\n');
    assert.ok(existsSync(join(d, '.vscode', 'settings.json')), 'untracked files stay');
    assert.deepEqual((await call('fix/check', { repo: d })).problems, []);
    assert.deepEqual(await call('repo/stash', { repo: d }), { stashed: false, message: `${d} had no tracked changes to stash` });
    // An untracked file does not stop a run; the run says the attempts do not see it.
    const { run_id } = await call('fix/start', {
      repo: d,
      issue: ISSUE,
      model: `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
      attempts: 1,
      provider: 'host',
    });
    assert.equal((await waitFinished(run_id)).status, 'fixed', stderr);
    assert.ok(
      progress.some(
        (p) => p.run_id === run_id && /1 untracked file\(s\) are not part of the attempts.*\.vscode\/settings\.json/.test(p.line),
      ),
      'the run names the untracked file',
    );
  });

  it('a run whose tests cannot run on the base commit says why and how to fix it in runs/show', async () => {
    const d = repo('py-calc');
    const { run_id } = await call('fix/start', {
      repo: d,
      issue: ISSUE,
      model: `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
      attempts: 1,
      provider: 'host',
      test_cmd: 'forge-no-such-test-tool --run',
    });
    const done = await waitFinished(run_id);
    assert.equal(done.status, 'failed');
    const snap = await call('runs/show', { run_id });
    assert.equal(snap.run.environment?.cause, 'command_not_found', JSON.stringify(snap.run));
    assert.match(snap.run.environment?.detail ?? '', /forge-no-such-test-tool/);
    assert.ok((snap.run.environment?.fix ?? '').length > 0);
    assert.ok(snap.cells.some((c) => c.purpose === 'baseline' && c.exit_code === 127));
    // The attempt started with the baseline (only its verdict waits for it) and was stopped
    // when the baseline ended the run: cancelled, never judged, none left queued or running.
    assert.deepEqual(
      snap.attempts.map((a) => [a.status, a.green]),
      [['cancelled', null]],
    );
  });

  let cancelledRun = '';
  let slowScript = '';
  it('fix/cancel kills the run and its cells; the run, its attempt and the killed cell say cancelled', async () => {
    const d = repo('py-calc');
    const script = (slowScript = join(state, 'slow.json'));
    writeFileSync(
      script,
      JSON.stringify({ version: 1, attempts: [[{ tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 120' } }] }]] }),
    );
    const { run_id } = await call('fix/start', { repo: d, issue: ISSUE, model: `replay:${script}`, attempts: 1, provider: 'host' });
    await waitFor(
      () => snapshots.find((s) => s.run.run_id === run_id && s.cells.some((c) => c.running && c.purpose === 'run_command')),
      60_000,
    );
    await assert.rejects(call('fix/resume', { run_id }), /is in progress in this runner; nothing to resume/);
    const t0 = Date.now();
    assert.deepEqual(await call('fix/cancel', { run_id }), { cancelled: true });
    const done = await waitFinished(run_id);
    assert.ok(Date.now() - t0 < 30_000, 'cancel did not wait for the cell');
    assert.deepEqual([done.status, done.error], ['cancelled', 'cancelled']);
    assert.equal(runningSeen.at(-1), 0);
    assert.deepEqual(await call('fix/cancel', { run_id }), { cancelled: false });
    assert.equal(git(d, 'worktree', 'list').trim().split('\n').length, 1, 'no attempt worktree left');
    const snap = await call('runs/show', { run_id });
    assert.deepEqual([snap.run.status, snap.attempts.map((a) => a.status)], ['cancelled', ['cancelled']]);
    assert.equal(snap.cells.find((c) => c.purpose === 'run_command')?.killed_by, 'cancel');
    cancelledRun = run_id;
  });

  it('fix/resume continues the cancelled run in this runner to its end; bad run ids are refused in one line', async () => {
    await assert.rejects(call('fix/resume', { run_id: 'run-nope' }), /no run run-nope; see runs\/list/);
    await assert.rejects(call('fix/resume', { run_id: runId }), /already ended \(fixed\); start a new run/);
    // The run's model is its replay file: now it fixes instead of sleeping.
    writeFileSync(slowScript, readFileSync(join(SAMPLES, 'py-calc', 'replay.json')));
    const before = finished.length;
    assert.deepEqual(await call('fix/resume', { run_id: cancelledRun }), { run_id: cancelledRun });
    const done = await waitFor(() => finished.slice(before).find((f) => f.run_id === cancelledRun), 200_000);
    assert.deepEqual([done.status, done.error], ['fixed', null], stderr);
    assert.ok(progress.some((p) => p.run_id === cancelledRun && /resumed, 1 attempt/.test(p.line)));
    const snap = await call('runs/show', { run_id: cancelledRun });
    assert.deepEqual(
      snap.attempts.map((a) => [a.status, a.winner]),
      [['finished', true]],
    );
    await call('review/discard', { run_id: cancelledRun });
  });
});
