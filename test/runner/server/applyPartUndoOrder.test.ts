import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { RPC_FIX_METHODS, RPC_FIX_NOTIFICATIONS } from '../../../runner/src/protocol/rpcFix.js';
import { git } from '../../helpers/gitRepo.js';
import { waitFor } from '../../helpers/waitFor.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const REPO = join(process.cwd(), 'test', 'fixtures', 'apply-part', 'repo');
const REPLAY = join(process.cwd(), 'test', 'fixtures', 'redteam-undo-order', 'replay.json');

/**
 * Red team (issue 31): applied_part and Undo must say what the checkout holds when parts are
 * applied one after another and undone in another order than they were applied (an older
 * notification's Undo Apply button names an older undo id).
 */
describe('forge-runner serve: parts applied one after another, undone out of order', function () {
  this.timeout(240_000);
  let state: string;
  let repo: string;
  let child: ChildProcessWithoutNullStreams;
  let rpc: MessageConnection;
  let runId = '';
  let otherRun = '';
  const finished: string[] = [];
  const call = <M extends keyof typeof RPC_FIX_METHODS>(method: M, params: unknown) =>
    rpc
      .sendRequest(method, params)
      .then((r) => RPC_FIX_METHODS[method].result.parse(r) as ReturnType<(typeof RPC_FIX_METHODS)[M]['result']['parse']>);
  const read = (p: string) => readFileSync(join(repo, p), 'utf8');
  const show = async () => (await call('runs/show', { run_id: runId })).run;

  before(async () => {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
    state = mkdtempSync(join(tmpdir(), 'forge-undo-order-'));
    repo = join(state, 'repo');
    cpSync(REPO, repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'base');
    child = spawn(process.execPath, [RUNNER, 'serve', '--stdio'], {
      env: { ...process.env, FORGE_STATE_DIR: join(state, 'state'), FORGE_CELLD_ENABLED: '' },
    });
    rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    rpc.onNotification('fix/finished', (p: unknown) => void finished.push(RPC_FIX_NOTIFICATIONS['fix/finished'].parse(p).run_id));
    rpc.listen();
    ({ run_id: runId } = await call('fix/start', {
      repo,
      issue: 'average() is wrong',
      model: `replay:${REPLAY}`,
      attempts: 1,
      provider: 'host',
    }));
    ({ run_id: otherRun } = await call('fix/start', {
      repo,
      issue: 'average() is wrong (again)',
      model: `replay:${REPLAY}`,
      attempts: 1,
      provider: 'host',
    }));
    await waitFor(() => finished.includes(runId) && finished.includes(otherRun), 200_000);
    assert.equal((await show()).status, 'fixed');
    const h = await call('review/hunks', { run_id: runId });
    assert.deepEqual(
      h.files.map((f) => [f.id, f.path, f.hunks.map((x) => x.id)]),
      [
        ['f0', 'calc.py', ['f0h0', 'f0h1']],
        ['f1', 'pytest.ini', ['f1h0']],
      ],
    );
  });
  after(async () => {
    rpc?.dispose();
    child?.stdin.end();
    if (child) await new Promise((r) => child.once('exit', r));
    rmSync(state, { recursive: true, force: true });
  });

  it('two parts applied one after the other: applied_part names the files of both', async () => {
    const one = await call('review/apply', { run_id: runId, selection: { hunks: ['f0h0'] }, merge: true, conflicts: 'yours' });
    const two = await call('review/apply', { run_id: runId, selection: { hunks: ['f1h0'] }, merge: true, conflicts: 'yours' });
    assert.equal(one.applied && two.applied, true);
    assert.match(read('calc.py'), /sum\(values\) \/ len\(values\)/);
    assert.match(read('pytest.ini'), /-rA -q/);
    const run = await show();
    assert.deepEqual(
      [...(run.applied_part?.files ?? [])].sort(),
      ['calc.py', 'pytest.ini'],
      'calc.py is still in the checkout: the part applied first must not vanish from applied_part',
    );
    // Back to the base for the next case, newest first.
    await call('review/undoApply', { run_id: runId, undo_id: two.undo_id! });
    await call('review/undoApply', { run_id: runId, undo_id: one.undo_id! });
    assert.equal(git(repo, 'status', '--porcelain').trim(), '');
    assert.equal((await show()).applied_part ?? null, null);
  });

  it('an older apply is not undone under a newer one that wrote the same file (the run would say applied with nothing in)', async () => {
    const part = await call('review/apply', { run_id: runId, selection: { hunks: ['f0h0'] }, merge: true, conflicts: 'yours' });
    const whole = await call('review/apply', { run_id: runId, merge: true, conflicts: 'yours' });
    assert.equal(part.applied && whole.applied, true);
    assert.equal((await show()).review, 'applied');
    // The first notification's Undo Apply button: its undo id, though a newer apply wrote calc.py since.
    await assert.rejects(call('review/undoApply', { run_id: runId, undo_id: part.undo_id! }), /newer apply .*undo it first/);
    assert.match(read('calc.py'), /sum\(values\) \/ len\(values\)/, 'refused: nothing restored');
    assert.equal((await show()).review, 'applied');
    // Newest first works, and leaves the part said.
    await call('review/undoApply', { run_id: runId, undo_id: whole.undo_id! });
    const run = await show();
    assert.deepEqual([run.review, run.applied_part?.files], ['pending', ['calc.py']]);
    await call('review/undoApply', { run_id: runId, undo_id: part.undo_id! });
    assert.equal(git(repo, 'status', '--porcelain').trim(), '');
  });

  it('parts that add up to the whole change: the run is applied, and undoing the last part makes it a part again', async () => {
    const parts = [];
    for (const hunk of ['f0h0', 'f1h0', 'f0h1'])
      parts.push(await call('review/apply', { run_id: runId, selection: { hunks: [hunk] }, merge: true, conflicts: 'yours' }));
    assert.ok(parts.every((p) => p.applied));
    let run = await show();
    assert.deepEqual([run.review, run.applied_part ?? null], ['applied', null], 'every hunk is in: not "partly applied"');
    await call('review/undoApply', { run_id: runId, undo_id: parts[2]!.undo_id! });
    run = await show();
    assert.equal(run.review, 'pending');
    assert.deepEqual([...(run.applied_part?.files ?? [])].sort(), ['calc.py', 'pytest.ini']);
    for (const p of [parts[1]!, parts[0]!]) await call('review/undoApply', { run_id: runId, undo_id: p.undo_id! });
    assert.equal(git(repo, 'status', '--porcelain').trim(), '');
  });

  it("another run's newer apply into the same file is undone first", async () => {
    const part = await call('review/apply', { run_id: runId, selection: { hunks: ['f0h0'] }, merge: true, conflicts: 'yours' });
    const other = await call('review/apply', { run_id: otherRun, merge: true, conflicts: 'yours' });
    assert.equal(part.applied && other.applied, true);
    await assert.rejects(
      call('review/undoApply', { run_id: runId, undo_id: part.undo_id! }),
      new RegExp(`newer apply of run ${otherRun} .*undo it first`),
    );
    assert.match(read('pytest.ini'), /-rA -q/, "refused: the other run's change stays");
    await call('review/undoApply', { run_id: otherRun, undo_id: other.undo_id! });
    await call('review/undoApply', { run_id: runId, undo_id: part.undo_id! });
    assert.equal(git(repo, 'status', '--porcelain').trim(), '');
  });

  it('an undo of the whole that could not restore a file: the run is pending and that file is said to hold a part', async () => {
    const whole = await call('review/apply', { run_id: runId, merge: true, conflicts: 'yours' });
    assert.equal((await show()).review, 'applied');
    rmSync(join(repo, 'pytest.ini'));
    mkdirSync(join(repo, 'pytest.ini'));
    await assert.rejects(call('review/undoApply', { run_id: runId, undo_id: whole.undo_id! }), /could not restore 1/);
    const run = await show();
    assert.deepEqual([run.review, run.applied_part?.files], ['pending', ['pytest.ini']], 'not pending with nothing said in');
    rmSync(join(repo, 'pytest.ini'), { recursive: true });
    await call('review/undoApply', { run_id: runId, undo_id: whole.undo_id! });
    assert.equal((await show()).applied_part ?? null, null);
  });
});
