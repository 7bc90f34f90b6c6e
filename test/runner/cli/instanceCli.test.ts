import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostInstanceProvider } from '../../../runner/src/instances/providers/hostInstanceProvider.js';
import { startWorkerd, type WorkerdHandle } from '../../../runner/src/instances/celld/workerdRuntime.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

describe('forge-runner instance / ledger / qualify CLI', function () {
  this.timeout(120_000);
  let state: string;
  const cli = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [RUNNER, ...args], {
      encoding: 'utf8',
      env: { ...process.env, FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '', ...env },
    });
  const lifecycle = (action: string, op: string, gen: number, extra: string[] = []) =>
    cli(['instance', action, '--instance', 'web', '--op-id', op, '--generation', String(gen), ...extra]);

  before(function () {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
    state = mkdtempSync(join(tmpdir(), 'forge-cli-inst-'));
  });
  after(() => {
    cli(['instance', 'destroy', '--instance', 'web', '--op-id', 'cleanup', '--generation', '1']);
    cli(['instance', 'destroy', '--instance', 'slow', '--op-id', 'cleanup-slow', '--generation', '1']);
    rmSync(state, { recursive: true, force: true });
  });

  it('--help explains operation ids, generations and exit codes', () => {
    const r = cli(['instance', 'provision', '--help']);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /--op-id/);
    assert.match(r.stdout, /4 rejected/);
    assert.match(cli(['instance', '--help']).stdout, /idempotency_mismatch/);
  });

  it('provision waits until ready (exit 0); a repeat is answered from the record, a reuse for another request exits 4', () => {
    const first = lifecycle('provision', 'p1', 1, ['--provider', 'host', '--json']);
    assert.equal(first.status, 0, first.stderr);
    const out = JSON.parse(first.stdout) as { reply: { status: string }; state: { state: string } };
    assert.deepEqual([out.reply.status, out.state.state], ['succeeded', 'ready']);
    const again = lifecycle('provision', 'p1', 1, ['--provider', 'host']);
    assert.equal(again.status, 0);
    assert.match(again.stdout, /p1: succeeded/);
    const mismatch = lifecycle('provision', 'p1', 1, ['--provider', 'docker', '--image', 'x']);
    assert.equal(mismatch.status, 4);
    assert.match(mismatch.stdout, /idempotency_mismatch/);
    const journal = new HostInstanceProvider({ stateDir: state }).journal('web', 1);
    assert.equal(journal.filter((l) => l.startsWith('start')).length, 1, 'one process for three deliveries');
  });

  it('future and stale generations exit 4 with the reason code', () => {
    const future = lifecycle('stop', 's-future', 2);
    assert.equal(future.status, 4);
    assert.match(future.stdout, /future_generation/);
    const ledger = cli(['ledger', 'show', 's-future', '--json']);
    assert.equal(ledger.status, 0);
    assert.equal(JSON.parse(ledger.stdout).status, 'rejected');
  });

  it('bad input: one line, exit 2, nothing recorded', () => {
    for (const args of [
      ['instance', 'stop', '--instance', 'web', '--op-id', 'b1', '--generation', 'abc'],
      ['instance', 'stop', '--instance', 'web', '--op-id', 'b2', '--generation', '0'],
      ['instance', 'provision', '--instance', 'other', '--op-id', 'b3', '--generation', '1'],
      ['instance', 'provision', '--instance', 'other', '--op-id', 'b4', '--generation', '1', '--provider', 'docker'],
      ['instance', 'provision', '--instance', 'other', '--op-id', 'b5', '--generation', '1', '--spec', '/nonexistent.json'],
      ['instance', 'stop', '--instance', 'x'.repeat(300), '--op-id', 'b6', '--generation', '1'],
      ['ledger', 'show', 'never-seen'],
      ['instance', 'reconcile'],
    ]) {
      const r = cli(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^forge-runner: |^error: /);
    }
    const bad = cli(['instance', 'list'], { FORGE_CELLD_ENABLED: 'maybe' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /FORGE_CELLD_ENABLED/);
    for (const op of ['b1', 'b2', 'b3', 'b4', 'b5', 'b6']) assert.equal(cli(['ledger', 'show', op]).status, 2, `${op} was recorded`);
    assert.deepEqual(
      JSON.parse(cli(['instance', 'list', '--json']).stdout).map((r: { instance_id: string }) => r.instance_id),
      ['web'],
    );
  });

  it('status, history and ledger show tell the whole story', () => {
    const status = JSON.parse(cli(['instance', 'status', 'web', '--json']).stdout);
    assert.equal(status.cell.state, 'ready');
    assert.equal(status.observation.runtime_state, 'running');
    assert.equal(status.coordinator, 'embedded');
    const history = cli(['instance', 'history', 'web']).stdout;
    assert.match(history, /command_accepted/);
    assert.match(history, /management .* p1 .* dispatched/);
    assert.match(history, /enrolled/);
    const show = cli(['ledger', 'show', 'p1']).stdout;
    assert.match(show, /provider effect: made by this operation/);
  });

  it('a readiness probe that never passes ends in failed (exit 5) with enrollment_timeout', () => {
    const spec = join(state, 'slow.json');
    writeFileSync(spec, JSON.stringify({ provider: 'host', readiness: ['false'], enroll_timeout_s: 1, probe_interval_ms: 100 }));
    const r = cli(['instance', 'provision', '--instance', 'slow', '--op-id', 'slow-p1', '--generation', '1', '--spec', spec]);
    assert.equal(r.status, 5, r.stdout + r.stderr);
    assert.match(r.stdout, /enrollment_timeout/);
    assert.match(r.stderr, /slow: enrolling\n.*slow: failed/s, 'progress on stderr');
  });

  it('--no-wait returns on acceptance; reconcile finishes the work (exit 0)', () => {
    const stop = lifecycle('stop', 's1', 1, ['--no-wait']);
    assert.equal(stop.status, 0);
    assert.match(stop.stdout, /s1: dispatched/);
    const rec = cli(['instance', 'reconcile', 'web', '--json']);
    assert.equal(rec.status, 0, rec.stderr);
    const [plan] = JSON.parse(rec.stdout) as Array<{ classes: string[]; state: string }>;
    assert.ok(plan!.classes.includes('pending'));
    assert.equal(plan!.state, 'stopped');
    const again = JSON.parse(cli(['instance', 'reconcile', 'web', '--json']).stdout)[0];
    assert.deepEqual(again.classes, ['converged']);
  });

  it('capabilities lists exclusions for the worker runtime', () => {
    const caps = JSON.parse(cli(['instance', 'capabilities', '--json']).stdout) as Array<{
      runtime: string;
      capabilities: Record<string, string>;
    }>;
    const worker = caps.find((c) => c.runtime === 'worker-celld')!;
    for (const c of ['task.exec', 'session.pty', 'workspace.bind']) assert.equal(worker.capabilities[c], 'no');
  });

  it('qualify (reduced counts) reports GO on every measure', function () {
    this.timeout(300_000);
    const r = cli(['qualify', '--json']);
    const report = JSON.parse(r.stdout) as { go: boolean; measures: Array<{ measure: string; pass: boolean; result: string }> };
    for (const m of report.measures) assert.ok(m.pass, `${m.measure}: ${m.result}`);
    assert.equal(r.status, 0);
    assert.equal(report.measures.length, 6);
  });
});

describe('forge-runner instance with Celld enabled (InstanceCell worker in workerd)', function () {
  this.timeout(120_000);
  const SECRET = 'cli-celld-secret-'.padEnd(48, 'q');
  let state: string;
  let wdDir: string;
  let wd: WorkerdHandle;
  const cli = (args: string[], env: Record<string, string>) =>
    spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', env: { ...process.env, FORGE_STATE_DIR: state, ...env } });
  const on = () => ({ FORGE_CELLD_ENABLED: '1', FORGE_CELLD_URL: wd.url, FORGE_CELLD_SECRET: SECRET });

  before(async () => {
    state = mkdtempSync(join(tmpdir(), 'forge-cli-celld-'));
    wdDir = mkdtempSync(join(tmpdir(), 'forge-cli-workerd-'));
    wd = await startWorkerd({
      bundle: join(process.cwd(), 'dist', 'instance-cell-worker.js'),
      storageDir: wdDir,
      secret: SECRET,
      celldVersion: 'workerd-reference',
    });
  });
  after(async () => {
    cli(['instance', 'destroy', '--instance', 'cw', '--op-id', 'cw-cleanup', '--generation', '1'], { FORGE_CELLD_ENABLED: '' });
    await wd?.stop();
    rmSync(state, { recursive: true, force: true });
    rmSync(wdDir, { recursive: true, force: true });
  });

  it('provisions through the worker and reports the version triple', () => {
    const r = cli(['instance', 'provision', '--instance', 'cw', '--op-id', 'cw-p1', '--generation', '1', '--provider', 'host'], on());
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const status = JSON.parse(cli(['instance', 'status', 'cw', '--json'], on()).stdout);
    assert.equal(status.coordinator, 'celld');
    assert.equal(status.cell.state, 'ready');
    assert.deepEqual(status.celld, { adapter_version: '1.0.0', celld_version: 'workerd-reference', protocol_version: 'instance-cell/v1' });
    assert.match(cli(['instance', 'history', 'cw'], on()).stdout, /celld-cell:cw/);
  });

  it('an unreachable Celld is one clear line and exit 1, not a stack trace', () => {
    const r = cli(['instance', 'status', 'cw'], { ...on(), FORGE_CELLD_URL: 'http://127.0.0.1:9' });
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /did not answer.*FORGE_CELLD_URL/);
  });
});
