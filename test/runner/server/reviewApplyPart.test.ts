import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { RPC_FIX_METHODS, RPC_FIX_NOTIFICATIONS } from '../../../runner/src/protocol/rpcFix.js';
import { git } from '../../helpers/gitRepo.js';
import { waitFor } from '../../helpers/waitFor.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const FIXTURE = join(process.cwd(), 'test', 'fixtures', 'apply-part');

/**
 * review/hunks and review/apply with a selection or a merge, over JSON-RPC to a real runner:
 * a part leaves the run pending and says what it left out; bad selections are refused in one
 * line with nothing written; a conflicting merge leaves markers and review/undoApply restores
 * the exact bytes and the run's review state.
 */
describe('forge-runner serve: apply part of an attempt, merge, undo', function () {
  this.timeout(240_000);
  let state: string;
  let repo: string;
  let child: ChildProcessWithoutNullStreams;
  let rpc: MessageConnection;
  let runId = '';
  const finished: string[] = [];
  const call = <M extends keyof typeof RPC_FIX_METHODS>(method: M, params: unknown) =>
    rpc
      .sendRequest(method, params)
      .then((r) => RPC_FIX_METHODS[method].result.parse(r) as ReturnType<(typeof RPC_FIX_METHODS)[M]['result']['parse']>);
  const calc = () => readFileSync(join(repo, 'calc.py'), 'utf8');

  before(async () => {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
    state = mkdtempSync(join(tmpdir(), 'forge-applypart-'));
    repo = join(state, 'repo');
    cpSync(join(FIXTURE, 'repo'), repo, { recursive: true });
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
      model: `replay:${join(FIXTURE, 'replay.json')}`,
      attempts: 1,
      provider: 'host',
    }));
    await waitFor(() => finished.includes(runId), 200_000);
    assert.equal((await call('runs/show', { run_id: runId })).run.status, 'fixed');
  });
  after(async () => {
    rpc?.dispose();
    child?.stdin.end();
    if (child) await new Promise((r) => child.once('exit', r));
    rmSync(state, { recursive: true, force: true });
  });

  it('lists two hunks; bad selections are refused in one line and write nothing', async () => {
    const h = await call('review/hunks', { run_id: runId });
    assert.deepEqual(
      h.files.map((f) => [f.path, f.hunks.map((x) => x.id)]),
      [['calc.py', ['f0h0', 'f0h1']]],
    );
    assert.match(h.files[0]!.hunks[1]!.header, /^@@ -19,5 \+19,5 @@ def count/);
    await assert.rejects(
      call('review/apply', { run_id: runId, selection: { hunks: ['f0h7'] } }),
      /unknown hunk id\(s\) f0h7; see review\/hunks/,
    );
    await assert.rejects(call('review/apply', { run_id: runId, selection: { hunks: ['../x'] } }), /hunk id/);
    await assert.rejects(call('review/apply', { run_id: runId, selection: {} }), /chooses nothing/);
    await assert.rejects(
      call('review/apply', { run_id: runId, selection: { files: ['/etc/passwd'] } }),
      /a file id from review\/hunks .*not a path/,
    );
    assert.equal(git(repo, 'status', '--porcelain').trim(), '');
  });

  it('a part applies only its hunk, keeps the run pending and names what it left out', async () => {
    const r = await call('review/apply', { run_id: runId, selection: { hunks: ['f0h1'] } });
    assert.equal(r.applied, true);
    assert.equal(r.branch_removed, null);
    assert.deepEqual(r.left_out, ['calc.py @@ -1,6 +1,6 @@']);
    assert.match(calc(), /The value as text\./);
    assert.match(calc(), /len\(values\) \+ 1/);
    const shown = (await call('runs/show', { run_id: runId })).run;
    assert.deepEqual(
      [shown.review, shown.applied_part],
      ['pending', { attempt: r.attempt, files: ['calc.py'] }],
      'a part is said, the run stays open',
    );
    assert.notEqual(git(repo, 'branch', '--list', 'forge/attempt/*').trim(), '', 'the winner branch stays for the rest');
  });

  it('the rest into a checkout edited on the same line: refused without merge, conflicts with it, undo restores bytes and review', async () => {
    const mine = calc().replace('(len(values) + 1)', 'max(len(values), 1)');
    writeFileSync(join(repo, 'calc.py'), mine);
    const plain = await call('review/apply', { run_id: runId });
    assert.equal(plain.applied, false);
    assert.equal(calc(), mine, 'nothing written');
    const merged = await call('review/apply', { run_id: runId, merge: true });
    assert.equal(merged.mode, 'conflicts');
    assert.deepEqual(
      merged.conflicts?.map((c) => c.path),
      ['calc.py'],
    );
    assert.equal(readFileSync(merged.conflicts![0]!.before, 'utf8'), mine);
    assert.match(calc(), /<<<<<<< your checkout/);
    const applied = (await call('runs/show', { run_id: runId })).run;
    assert.deepEqual([applied.review, applied.applied_part, applied.applied_attempt], ['applied', null, merged.attempt]);
    const undone = await call('review/undoApply', { run_id: runId, undo_id: merged.undo_id! });
    assert.deepEqual([undone.restored, undone.review], [['calc.py'], 'pending']);
    assert.equal((await call('runs/show', { run_id: runId })).run.applied_attempt, null, 'undone: no attempt is applied');
    assert.deepEqual(undone.still_applied?.files, ['calc.py'], 'the part applied before is still in: the client can offer its undo');
    assert.equal(calc(), mine);
    assert.deepEqual(
      (await call('runs/show', { run_id: runId })).run.applied_part?.files,
      ['calc.py'],
      'the part applied before is still there',
    );
    await assert.rejects(call('review/undoApply', { run_id: runId, undo_id: merged.undo_id! }), /nothing to undo/);
    await assert.rejects(call('review/undoApply', { run_id: runId, undo_id: '../../etc' }), /not an undo id/);
  });

  it('the CLI lists hunks and refuses a bad selection in one line with exit 2', () => {
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [RUNNER, 'runs', ...args], {
        env: { ...process.env, FORGE_STATE_DIR: join(state, 'state') },
        encoding: 'utf8',
      });
    const listed = cli('hunks', runId);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /^f0 +calc\.py\n {2}f0h0 +\+1 -1 {2}@@ -1,6 \+1,6 @@\n {2}f0h1 /);
    const before = calc();
    const bad = cli('apply', runId, '--hunks', 'f0h9');
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /unknown hunk id\(s\) f0h9/);
    assert.equal(calc(), before);
    assert.equal(cli('undo-apply', runId, '--undo-id', 'x/y').status, 2);
  });

  it('an undo that cannot restore a file names it, restores the rest, and can be run again once the obstacle is gone', async () => {
    const mine = calc();
    const merged = await call('review/apply', { run_id: runId, merge: true });
    assert.equal(merged.applied, true);
    rmSync(join(repo, 'calc.py'));
    mkdirSync(join(repo, 'calc.py'));
    writeFileSync(join(repo, 'calc.py', 'in-the-way'), 'x');
    await assert.rejects(
      call('review/undoApply', { run_id: runId, undo_id: merged.undo_id! }),
      /could not restore 1: "calc.py" \(a directory is there now\); fix that and undo again/,
    );
    rmSync(join(repo, 'calc.py'), { recursive: true });
    const again = await call('review/undoApply', { run_id: runId, undo_id: merged.undo_id! });
    assert.deepEqual(again.restored, ['calc.py']);
    assert.equal(calc(), mine);
  });
});
