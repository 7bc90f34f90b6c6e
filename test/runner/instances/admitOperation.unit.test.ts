import assert from 'node:assert/strict';
import fc from 'fast-check';
import { admitOperation, type OperationRecord, TERMINAL } from '../../../runner/src/instances/admitOperation.js';
import { type OperationRequest, OperationRequestSchema, requestHash } from '../../../runner/src/instances/operationRequest.js';

const req = (over: Partial<OperationRequest> = {}): OperationRequest =>
  OperationRequestSchema.parse({
    operation_id: 'op-1',
    instance_id: 'i-1',
    generation: 1,
    action: 'provision',
    payload: { image: 'x', cpus: 2 },
    ...over,
  });

describe('operation request hash (RFC 8785)', () => {
  it('is independent of key order and stable', () => {
    const a = requestHash(req({ payload: { image: 'x', cpus: 2 } }));
    const b = requestHash(
      OperationRequestSchema.parse({
        payload: { cpus: 2, image: 'x' },
        action: 'provision',
        generation: 1,
        instance_id: 'i-1',
        operation_id: 'op-1',
      }),
    );
    assert.equal(a, b);
    assert.match(a, /^[0-9a-f]{64}$/);
    assert.notEqual(requestHash(req({ payload: { image: 'y', cpus: 2 } })), a);
    assert.notEqual(requestHash(req({ generation: 2 })), a);
  });

  it('rejects malformed requests', () => {
    for (const bad of [
      { operation_id: '' },
      { operation_id: 'x'.repeat(256) },
      { generation: 0 },
      { generation: 1.5 },
      { action: 'reboot' },
      { extra: 1 },
    ]) {
      assert.equal(OperationRequestSchema.safeParse({ ...req(), ...bad }).success, false, JSON.stringify(bad));
    }
  });
});

describe('admitOperation', () => {
  const rec = (status: OperationRecord['status'], hash = requestHash(req())): OperationRecord => ({
    operation_id: 'op-1',
    request_hash: hash,
    status,
  });

  it('same id + same hash: the recorded outcome when terminal, in flight otherwise; never a new effect', () => {
    for (const s of ['succeeded', 'failed', 'rejected'] as const)
      assert.equal(admitOperation(req(), requestHash(req()), rec(s), 1).kind, 'replay');
    for (const s of ['pending', 'dispatched', 'unknown'] as const)
      assert.equal(admitOperation(req(), requestHash(req()), rec(s), 1).kind, 'in_flight');
  });

  it('same id + another request: idempotency_mismatch', () => {
    const other = req({ payload: { image: 'other' } });
    const a = admitOperation(other, requestHash(other), rec('succeeded'), 1);
    assert.deepEqual([a.kind, a.kind === 'reject' && a.reason], ['reject', 'idempotency_mismatch']);
  });

  it('stale generations are rejected; future ones too unless a provision creates the next incarnation', () => {
    const stop = req({ operation_id: 'op-2', action: 'stop', generation: 1 });
    assert.deepEqual(admitOperation(stop, requestHash(stop), null, 2), {
      kind: 'reject',
      reason: 'stale_generation',
      detail: 'generation 1 is older than the observed generation 2',
    });
    const future = req({ operation_id: 'op-3', action: 'start', generation: 3 });
    assert.equal((admitOperation(future, requestHash(future), null, 2) as { reason: string }).reason, 'future_generation');
    const next = req({ operation_id: 'op-4', action: 'provision', generation: 3 });
    assert.equal(admitOperation(next, requestHash(next), null, 2).kind, 'admit');
    const first = req({ operation_id: 'op-5', action: 'provision', generation: 1 });
    assert.equal(admitOperation(first, requestHash(first), null, null).kind, 'admit');
    const skip = req({ operation_id: 'op-6', action: 'provision', generation: 2 });
    assert.equal(admitOperation(skip, requestHash(skip), null, null).kind, 'reject');
  });

  it('over any sequence of deliveries, at most one admit per operation id and no admit of a mismatched request (property)', () => {
    const delivery = fc.record({
      op: fc.constantFrom('op-a', 'op-b', 'op-c'),
      payload: fc.constantFrom('p1', 'p2'),
      generation: fc.integer({ min: 1, max: 3 }),
      action: fc.constantFrom('provision', 'start', 'stop', 'destroy'),
      settle: fc.constantFrom('succeeded', 'failed', 'unknown', null),
    });
    fc.assert(
      fc.property(fc.array(delivery, { maxLength: 40 }), fc.integer({ min: 0, max: 2 }), (deliveries, gen) => {
        const ledger = new Map<string, OperationRecord>();
        const admitted = new Map<string, number>();
        for (const d of deliveries) {
          const r = req({
            operation_id: d.op,
            payload: { v: d.payload },
            generation: d.generation,
            action: d.action as OperationRequest['action'],
          });
          const hash = requestHash(r);
          const existing = ledger.get(d.op) ?? null;
          const a = admitOperation(r, hash, existing, gen === 0 ? null : gen);
          if (a.kind === 'admit') {
            if (existing) return false;
            admitted.set(d.op, (admitted.get(d.op) ?? 0) + 1);
            ledger.set(d.op, { operation_id: d.op, request_hash: hash, status: d.settle ?? 'pending' });
          } else if (a.kind === 'replay' || a.kind === 'in_flight') {
            if (!existing || existing.request_hash !== hash) return false;
            if ((a.kind === 'replay') !== TERMINAL.has(existing.status)) return false;
          } else if (a.reason === 'idempotency_mismatch' && (!existing || existing.request_hash === hash)) {
            return false;
          }
        }
        return [...admitted.values()].every((n) => n === 1);
      }),
      { numRuns: 300 },
    );
  });
});
