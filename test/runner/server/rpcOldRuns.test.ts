import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { RPC_FIX_METHODS, RPC_FIX_NOTIFICATIONS, type RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { git } from '../../helpers/gitRepo.js';
import { SAMPLES, sampleRepo } from '../../helpers/sampleRepo.js';
import { waitFor } from '../../helpers/waitFor.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

/** runs/old and runs/discardOld (issue 31, branch hygiene) against a real runner, store and run. */
describe('forge-runner serve --stdio: runs/old and runs/discardOld', function () {
  this.timeout(240_000);
  let state: string;
  let child: ChildProcessWithoutNullStreams;
  let rpc: MessageConnection;
  let stderr = '';
  const finished: string[] = [];
  const snapshots: RunSnapshot[] = [];
  const repo = sampleRepo('py-calc');
  const call = <M extends keyof typeof RPC_FIX_METHODS>(method: M, params: unknown) =>
    rpc
      .sendRequest(method, params)
      .then((r) => RPC_FIX_METHODS[method].result.parse(r) as ReturnType<(typeof RPC_FIX_METHODS)[M]['result']['parse']>);
  const branches = () => git(repo.dir, 'branch', '--list', 'forge/*', '--format=%(refname:short)').split('\n').filter(Boolean);

  before(() => {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
    state = mkdtempSync(join(tmpdir(), 'forge-rpcold-'));
    child = spawn(process.execPath, [RUNNER, 'serve', '--stdio'], {
      env: { ...process.env, FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '' },
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    rpc.onNotification('fix/finished', (p: unknown) => void finished.push(RPC_FIX_NOTIFICATIONS['fix/finished'].parse(p).run_id));
    rpc.onNotification('runs/changed', (p: unknown) => void snapshots.push(RPC_FIX_NOTIFICATIONS['runs/changed'].parse(p)));
    rpc.listen();
  });

  after(async () => {
    rpc?.dispose();
    child?.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    rmSync(state, { recursive: true, force: true });
    repo.cleanup();
  });

  it('lists a run only once it is older than asked, and discards it after checking again', async () => {
    const { run_id } = await call('fix/start', {
      repo: repo.dir,
      issue: readFileSync(join(SAMPLES, 'py-calc', 'issue.md'), 'utf8'),
      model: `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
      attempts: 1,
      provider: 'host',
    });
    // In progress: never listed, never discarded.
    const during = await call('runs/discardOld', { run_ids: [run_id], older_than_s: 1e-3 });
    if (!finished.includes(run_id)) assert.equal(during.results[0]!.discarded, false);
    await waitFor(() => finished.includes(run_id), 200_000);
    assert.equal((await call('runs/show', { run_id })).run.status, 'fixed', stderr);
    assert.deepEqual(branches(), [`forge/attempt/${run_id}-a0`]);

    // Just ended: not older than an hour.
    assert.deepEqual((await call('runs/old', { older_than_s: 3600 })).runs, []);
    const recent = await call('runs/discardOld', { run_ids: [run_id], older_than_s: 3600 });
    assert.deepEqual(recent.results, [{ run_id, discarded: false, removed: [], reason: 'left: recent' }]);
    assert.deepEqual(branches(), [`forge/attempt/${run_id}-a0`]);

    // Dated two hours back in the store the runner uses.
    const db = openStore(join(state, 'forge.db'));
    const then = new Date(Date.now() - 2 * 3600_000).toISOString();
    db.prepare('UPDATE runs SET updated_at = ? WHERE id = ?').run(then, run_id);
    db.close();

    const old = await call('runs/old', { older_than_s: 3600 });
    assert.equal(old.runs.length, 1);
    assert.equal(old.runs[0]!.run_id, run_id);
    assert.match(old.runs[0]!.issue_title, /^average\(\) is wrong/);
    assert.deepEqual(old.runs[0]!.branches, [`forge/attempt/${run_id}-a0`]);
    assert.ok(old.runs[0]!.age_s >= 7199, String(old.runs[0]!.age_s));
    assert.deepEqual(branches(), [`forge/attempt/${run_id}-a0`], 'listing removes nothing');

    const r = await call('runs/discardOld', { run_ids: ['run-nope-000000', run_id], older_than_s: 3600 });
    assert.deepEqual(r.results[0], {
      run_id: 'run-nope-000000',
      discarded: false,
      removed: [],
      reason: 'the store does not know this run',
    });
    assert.equal(r.results[1]!.discarded, true, JSON.stringify(r));
    assert.deepEqual(r.results[1]!.removed, [`branch forge/attempt/${run_id}-a0`]);
    assert.deepEqual(branches(), []);
    assert.equal((await call('runs/show', { run_id })).run.review, 'discarded');
    await waitFor(() => snapshots.find((s) => s.run.run_id === run_id && s.run.review === 'discarded'), 10_000);
    // Reviewed now: not offered again.
    assert.deepEqual((await call('runs/old', { older_than_s: 3600 })).runs, []);
  });

  it('refuses bad params in one line, with nothing done', async () => {
    await assert.rejects(call('runs/old', { older_than_s: -1 }), /runs\/old params/);
    await assert.rejects(call('runs/old', {}), /runs\/old params/);
    await assert.rejects(call('runs/discardOld', { run_ids: ['../x'], older_than_s: 60 }), /runs\/discardOld params/);
    await assert.rejects(call('runs/discardOld', { run_ids: [], older_than_s: 60 }), /runs\/discardOld params/);
  });
});
