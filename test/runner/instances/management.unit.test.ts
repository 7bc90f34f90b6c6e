import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { InstanceSpecSchema, type OperationRequest } from '../../../runner/src/protocol/instanceCell.js';
import { LostResponseError } from '../../../runner/src/instances/management/faultPoints.js';
import { Management } from '../../../runner/src/instances/management/management.js';
import { requestHash } from '../../../runner/src/instances/operationRequest.js';
import { InstanceHarness } from '../../helpers/instanceHarness.js';

const spec = InstanceSpecSchema.parse({ provider: 'host' });
const req = (op: string, action: OperationRequest['action'], generation = 1, instance = 'm1'): OperationRequest => ({
  operation_id: op,
  instance_id: instance,
  generation,
  action,
  payload: action === 'provision' ? { spec } : {},
});

describe('management: operation ledger and effect service (SQLite on disk, host provider)', () => {
  let h: InstanceHarness;
  beforeEach(() => (h = new InstanceHarness()));
  afterEach(async () => h.cleanup());

  const apply = (r: OperationRequest) => h.management.apply(r, requestHash(r));

  it('one effect per operation id; repeats answer from the ledger without calling the provider', async () => {
    const r = req('p1', 'provision');
    assert.equal((await apply(r)).outcome, 'succeeded');
    const results = await Promise.all(Array.from({ length: 30 }, () => apply(r)));
    assert.ok(results.every((x) => x.outcome === 'succeeded'));
    assert.equal(h.providers.callsFor('p1').length, 1);
    assert.equal(h.store.operation('p1')!.changed, 1);
  });

  it('same id with another payload: idempotency_mismatch, and the original record stands', async () => {
    await apply(req('p1', 'provision'));
    const other = { ...req('p1', 'provision'), payload: { spec: { ...spec, env: { X: '1' } } } };
    const r = await apply(other);
    assert.deepEqual([r.outcome, r.reason], ['rejected', 'idempotency_mismatch']);
    assert.equal(h.store.operation('p1')!.status, 'succeeded');
    assert.equal(h.store.operation('p1')!.request_hash, requestHash(req('p1', 'provision')));
  });

  it('stale generation rejected before any provider call; future generation until created', async () => {
    await apply(req('p1', 'provision'));
    await apply(req('d1', 'destroy'));
    await apply(req('p2', 'provision', 2));
    const calls = h.providers.calls.length;
    for (const [op, action, gen, reason] of [
      ['s-stale', 'stop', 1, 'stale_generation'],
      ['d-stale', 'destroy', 1, 'stale_generation'],
      ['s-future', 'stop', 3, 'future_generation'],
      ['p-skip', 'provision', 4, 'future_generation'],
    ] as const) {
      const r = await apply(req(op, action, gen));
      assert.deepEqual([r.outcome, r.reason], ['rejected', reason], op);
      assert.equal(h.store.operation(op)!.status, 'rejected', 'terminal: a repeat gets the same answer');
    }
    assert.equal(h.providers.calls.length, calls, 'no provider call for any of them');
  });

  it('refuses a new incarnation while the old one has a runtime, and commands for unknown instances', async () => {
    await apply(req('p1', 'provision'));
    assert.equal((await apply(req('p2', 'provision', 2))).reason, 'invalid_transition');
    assert.equal((await apply(req('x', 'stop', 1, 'nobody'))).reason, 'unknown_instance');
    const none = new Management(h.store, { get: () => null });
    const q = req('q1', 'provision', 1, 'vm');
    assert.equal((await none.apply(q, requestHash(q))).reason, 'provider_unavailable');
  });

  it('every ledger transition has its evidence row, written in the same transaction', async () => {
    await apply(req('p1', 'provision'));
    await apply(req('s1', 'stop', 5));
    const ev = h.store.evidence({ operationId: 'p1' });
    assert.deepEqual(
      ev.map((e) => e.event),
      ['incarnation_created', 'dispatched', 'succeeded'],
    );
    for (const e of ev) {
      assert.equal(e.generation, 1);
      assert.match(e.actor, /^management@/);
      assert.ok(e.at > 0);
    }
    assert.deepEqual(
      h.store.evidence({ operationId: 's1' }).map((e) => e.event),
      ['rejected'],
    );
    // Atomicity: a failing write inside the transaction leaves neither the row nor its evidence.
    assert.throws(() =>
      h.store.tx(() => {
        h.store.updateOperation('p1', { status: 'failed' }, Date.now());
        h.store.addEvidence({
          at: 1,
          source: 'management',
          actor: 'x',
          instance_id: 'm1',
          operation_id: 'p1',
          generation: 1,
          event: 'bogus',
          from_state: null,
          to_state: null,
          detail: null,
        });
        throw new Error('crash mid-transaction');
      }),
    );
    assert.equal(h.store.operation('p1')!.status, 'succeeded');
    assert.ok(!h.store.evidence({ operationId: 'p1' }).some((e) => e.event === 'bogus'));
  });

  it('an operation left dispatched by a dead runner is resolved under its own id, without a second effect', async () => {
    // Management "A" records dispatch and the provider makes the effect, then A dies before recording.
    const a = new Management(h.store, h.providers, {
      faults: (p) => {
        if (p === 'provider_effect_done') throw new Error('simulated crash');
      },
    });
    const r = req('p9', 'provision', 1, 'm9');
    await assert.rejects(a.apply(r, requestHash(r)), /simulated crash/);
    h.db.prepare('UPDATE operations SET owner_pid = 999999999 WHERE operation_id = ?').run('p9');
    assert.equal(h.store.operation('p9')!.status, 'dispatched');
    const b = new Management(h.store, h.providers, { isOwnerAlive: (host, pid) => host === hostname() && pid !== 999999999 });
    const resolved = await b.lookup('p9');
    assert.equal(resolved.outcome, 'succeeded');
    assert.equal(resolved.observation?.runtime_state, 'running');
    assert.equal(h.providers.effectsPerOperation().get('p9'), 1, 'the re-drive found the effect made');
    assert.deepEqual(
      h.store.evidence({ operationId: 'p9' }).map((e) => e.event),
      ['incarnation_created', 'dispatched', 'redriven', 'succeeded'],
    );
  });

  it('an operation in flight in a live runner is reported unknown, not re-driven', async () => {
    const r = req('p1', 'provision');
    h.store.tx(() => {
      h.store.upsertInstance({
        instance_id: 'm1',
        provider: 'host',
        generation: 1,
        runtime_state: 'absent',
        runtime_id: null,
        spec_json: JSON.stringify(spec),
        created_at: 1,
        updated_at: 1,
      });
      h.store.insertOperation({
        operation_id: 'p1',
        instance_id: 'm1',
        generation: 1,
        action: 'provision',
        request_hash: requestHash(r),
        request_json: JSON.stringify(r),
        status: 'dispatched',
        reason: null,
        owner_host: hostname(),
        owner_pid: 1,
        changed: null,
        created_at: 1,
        updated_at: 1,
        finished_at: null,
      });
    });
    assert.equal((await h.management.lookup('p1')).outcome, 'unknown');
    assert.equal((await apply(r)).outcome, 'unknown');
    assert.equal(h.providers.calls.length, 0);
  });

  it('a lost answer after recording: the lookup returns the recorded outcome', async () => {
    let drop = true;
    const m = new Management(h.store, h.providers, {
      faults: (p) => {
        if (p === 'drop_response' && drop) {
          drop = false;
          throw new LostResponseError('lost');
        }
      },
    });
    const r = req('p1', 'provision');
    await assert.rejects(m.apply(r, requestHash(r)), LostResponseError);
    assert.equal((await m.lookup('p1')).outcome, 'succeeded');
    assert.equal((await m.lookup('nope')).outcome, 'not_found');
    assert.equal(h.providers.callsFor('p1').length, 1);
  });

  it('retention prunes finished operations and their evidence, never open ones', async () => {
    await apply(req('p1', 'provision'));
    await apply(req('s-bad', 'stop', 7));
    h.db.prepare("UPDATE operations SET status = 'unknown', finished_at = 0 WHERE operation_id = 's-bad'").run();
    assert.equal(h.store.pruneFinished(Date.now() + 1), 1);
    assert.equal(h.store.operation('p1'), null);
    assert.deepEqual(h.store.evidence({ operationId: 'p1' }), []);
    assert.ok(h.store.operation('s-bad'), 'an open operation is kept');
  });
});

describe('management: bad reuse of a rejected id', () => {
  it('an id rejected for an unknown instance, reused with another payload: idempotency_mismatch (no crash)', async () => {
    const h = new InstanceHarness();
    try {
      const a = req('x', 'stop', 1, 'ghost');
      const b = req('x', 'destroy', 1, 'ghost');
      assert.equal((await h.management.apply(a, requestHash(a))).reason, 'unknown_instance');
      assert.equal((await h.management.apply(b, requestHash(b))).reason, 'idempotency_mismatch');
    } finally {
      await h.cleanup();
    }
  });
});
