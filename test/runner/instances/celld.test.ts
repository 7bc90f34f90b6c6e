// The InstanceCell worker in a real workerd (the npm package's binary), driven through the
// owned compatibility adapter: lifecycle, persistence across a runtime restart, alarms
// fired by the Durable Object itself, request signing and fail-closed version checks.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InstanceSpecSchema } from '../../../runner/src/protocol/instanceCell.js';
import { CelldCellHost, CelldCompatibilityError } from '../../../runner/src/instances/celld/celldCellHost.js';
import { celldSettingsFromEnv } from '../../../runner/src/instances/celld/celldSettings.js';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, signRequest } from '../../../runner/src/instances/celld/signedRequest.js';
import { startWorkerd, type WorkerdHandle } from '../../../runner/src/instances/celld/workerdRuntime.js';
import { InstanceCoordinator } from '../../../runner/src/instances/instanceCoordinator.js';
import { requestHash } from '../../../runner/src/instances/operationRequest.js';
import { InstanceHarness } from '../../helpers/instanceHarness.js';

const BUNDLE = join(process.cwd(), 'dist', 'instance-cell-worker.js');
const SECRET = 'test-secret-'.padEnd(48, 'x');
const spec = InstanceSpecSchema.parse({ provider: 'host', probe_interval_ms: 50 });

describe('InstanceCell worker in workerd, through the Celld adapter', function () {
  this.timeout(120_000);
  let dir: string;
  let wd: WorkerdHandle;
  let h: InstanceHarness;

  before(async function () {
    if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} missing: npm test builds it (pretest); run npm run build`);
    dir = mkdtempSync(join(tmpdir(), 'forge-workerd-'));
    wd = await startWorkerd({ bundle: BUNDLE, storageDir: dir, secret: SECRET, celldVersion: 'workerd-reference' });
  });
  after(async () => {
    await wd?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => (h = new InstanceHarness()));
  afterEach(async () => h.cleanup());

  const coordinator = () => new InstanceCoordinator(new CelldCellHost({ url: wd.url, secret: SECRET, timeoutMs: 10_000 }), h.management);

  it('runs the lifecycle with the cell in the Durable Object and evidence on both sides', async () => {
    const c = coordinator();
    const id = `wd-life-${Date.now()}`;
    await c.submit({ operation_id: `${id}-p1`, instance_id: id, generation: 1, action: 'provision', payload: { spec } });
    assert.equal((await c.drive(id, { timeoutMs: 30_000 })).state.state, 'ready');
    const repeat = await c.submit({ operation_id: `${id}-p1`, instance_id: id, generation: 1, action: 'provision', payload: { spec } });
    assert.equal(repeat.status, 'succeeded');
    await c.submit({ operation_id: `${id}-d1`, instance_id: id, generation: 1, action: 'destroy', payload: {} });
    assert.equal((await c.drive(id, { timeoutMs: 30_000 })).state.state, 'destroyed');
    assert.equal(h.providers.effectsPerOperation().get(`${id}-p1`), 1);
    const cellEvidence = await c.cells.evidence(id);
    assert.ok(cellEvidence.some((e) => e.event === 'enrolled' && e.actor.startsWith('celld-cell:')));
    assert.ok(
      h.store.evidence({ instanceId: id }).every((e) => e.source === 'management'),
      'management keeps its own evidence apart',
    );
    const host = c.cells as CelldCellHost;
    assert.deepEqual(host.versions, { adapter_version: '1.0.0', celld_version: 'workerd-reference', protocol_version: 'instance-cell/v1' });
  });

  it('state and alarms survive a runtime restart; the object fires its own lookup alarm', async () => {
    const id = `wd-alarm-${Date.now()}`;
    const cells = new CelldCellHost({ url: wd.url, secret: SECRET, timeoutMs: 10_000 });
    const request = { operation_id: `${id}-p1`, instance_id: id, generation: 1, action: 'provision' as const, payload: { spec } };
    await cells.step(id, { kind: 'command', request, hash: requestHash(request), spec });
    // The answer is lost: the cell records unknown and arms a lookup alarm in its own storage.
    await cells.step(id, {
      kind: 'effect_result',
      result: { operation_id: request.operation_id, outcome: 'unknown', reason: 'lost', observation: null },
    });
    assert.equal((await cells.read(id))!.state, 'unknown');
    assert.ok((await cells.nextAlarmAt(id))! > 0);
    await wd.stop();
    wd = await startWorkerd({ bundle: BUNDLE, storageDir: dir, secret: SECRET, celldVersion: 'workerd-reference' });
    const after = new CelldCellHost({ url: wd.url, secret: SECRET, timeoutMs: 10_000 });
    const until = Date.now() + 10_000;
    let state = await after.read(id);
    while (Date.now() < until && state!.operations[0]!.next !== 'lookup') {
      await new Promise((r) => setTimeout(r, 100));
      state = await after.read(id);
    }
    assert.equal(state!.operations[0]!.next, 'lookup', 'the alarm fired inside the Durable Object after the restart');
    assert.equal(state!.operations[0]!.status, 'unknown');
  });

  it('refuses unsigned, forged and stale requests', async () => {
    const path = '/v1/cells/x/state';
    assert.equal((await fetch(wd.url + path)).status, 401);
    const ts = String(Date.now());
    const forged = await fetch(wd.url + path, {
      headers: { [HEADER_TIMESTAMP]: ts, [HEADER_SIGNATURE]: await signRequest('another-secret'.padEnd(40, 'y'), ts, 'GET', path, '') },
    });
    assert.equal(forged.status, 401);
    const old = String(Date.now() - 10 * 60_000);
    const stale = await fetch(wd.url + path, {
      headers: { [HEADER_TIMESTAMP]: old, [HEADER_SIGNATURE]: await signRequest(SECRET, old, 'GET', path, '') },
    });
    assert.equal(stale.status, 401);
    assert.match(await stale.text(), /stale_timestamp/);
    // A signed request for one path cannot be replayed onto another.
    const sig = await signRequest(SECRET, ts, 'GET', path, '');
    assert.equal((await fetch(wd.url + '/v1/cells/y/state', { headers: { [HEADER_TIMESTAMP]: ts, [HEADER_SIGNATURE]: sig } })).status, 401);
  });

  it('the adapter refuses a worker with another secret (unsigned answers) and rejects tampered commands', async () => {
    const wrong = new CelldCellHost({ url: wd.url, secret: 'wrong-secret'.padEnd(40, 'z'), timeoutMs: 5000 });
    await assert.rejects(wrong.read('x'), CelldCompatibilityError);
    const cells = new CelldCellHost({ url: wd.url, secret: SECRET, timeoutMs: 5000 });
    const request = { operation_id: 'tamper-1', instance_id: 'tamper', generation: 1, action: 'provision' as const, payload: { spec } };
    await assert.rejects(cells.step('tamper', { kind: 'command', request, hash: 'f'.repeat(64), spec }), /request hash does not match/);
    await assert.rejects(cells.step('other', { kind: 'command', request, hash: requestHash(request), spec }), /differs from the cell/);
  });

  it('fails closed on an unknown celld version', async () => {
    const d2 = mkdtempSync(join(tmpdir(), 'forge-workerd-v-'));
    const future = await startWorkerd({ bundle: BUNDLE, storageDir: d2, secret: SECRET, celldVersion: 'v0.3.0' });
    try {
      const c = new CelldCellHost({ url: future.url, secret: SECRET, timeoutMs: 5000 });
      await assert.rejects(c.read('x'), (e: Error) => e instanceof CelldCompatibilityError && /celld_version v0.3.0/.test(e.message));
    } finally {
      await future.stop();
      rmSync(d2, { recursive: true, force: true });
    }
  });
});

describe('Celld settings', () => {
  it('off by default: nothing is read, nothing is contacted', () => {
    assert.equal(celldSettingsFromEnv({}), null);
    assert.equal(celldSettingsFromEnv({ FORGE_CELLD_ENABLED: '0', FORGE_CELLD_URL: 'http://x' }), null);
  });
  it('enabled needs a URL and a secret of at least 32 characters, with one-line errors', () => {
    assert.throws(() => celldSettingsFromEnv({ FORGE_CELLD_ENABLED: 'maybe' }), /expected 1\/true\/on/);
    assert.throws(() => celldSettingsFromEnv({ FORGE_CELLD_ENABLED: '1' }), /FORGE_CELLD_URL/);
    assert.throws(
      () => celldSettingsFromEnv({ FORGE_CELLD_ENABLED: '1', FORGE_CELLD_URL: 'http://127.0.0.1:1', FORGE_CELLD_SECRET: 'short' }),
      /at least 32/,
    );
    assert.deepEqual(
      celldSettingsFromEnv({ FORGE_CELLD_ENABLED: 'on', FORGE_CELLD_URL: 'http://h:1/', FORGE_CELLD_SECRET: 's'.repeat(32) }),
      { url: 'http://h:1', secret: 's'.repeat(32), timeoutMs: 10_000 },
    );
  });
});
