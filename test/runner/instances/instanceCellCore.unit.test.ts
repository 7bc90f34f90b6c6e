import assert from 'node:assert/strict';
import { InstanceSpecSchema, type InstanceCellState, type OperationRequest } from '../../../runner/src/protocol/instanceCell.js';
import {
  type CellInput,
  DEFAULT_CORE_SETTINGS,
  emptyCell,
  owedEffects,
  step,
} from '../../../runner/src/instances/core/instanceCellCore.js';
import { requestHash } from '../../../runner/src/instances/operationRequest.js';

const spec = InstanceSpecSchema.parse({ provider: 'host', enroll_timeout_s: 5, probe_interval_ms: 100 });
const obs = (generation: number, runtime_state: 'absent' | 'running' | 'exited' | 'removed' = 'running') => ({
  generation,
  runtime_state,
  runtime_id: null,
});

function req(
  op: string,
  action: OperationRequest['action'],
  generation = 1,
  payload: Record<string, unknown> = action === 'provision' ? { spec } : {},
): OperationRequest {
  return { operation_id: op, instance_id: 'i1', generation, action, payload };
}

/** A tiny driver over the pure core with a controllable clock. */
class Cell {
  state: InstanceCellState = emptyCell('i1', 0);
  now = 1000;
  alarms = new Map<string, number>();
  send(input: CellInput) {
    const out = step(this.state, input, { now: this.now, actor: 'test' });
    this.state = out.state;
    for (const a of out.alarms) {
      if (a.due_at === null) this.alarms.delete(a.name);
      else this.alarms.set(a.name, a.due_at);
    }
    return out;
  }
  command(r: OperationRequest) {
    return this.send({ kind: 'command', request: r, hash: requestHash(r), spec: r.action === 'provision' ? spec : null }).reply!;
  }
  result(
    op: string,
    outcome: 'succeeded' | 'failed' | 'rejected' | 'unknown' | 'not_found',
    observation = obs(1),
    reason: string | null = null,
  ) {
    return this.send({ kind: 'effect_result', result: { operation_id: op, outcome, reason, observation } });
  }
  probe(ready: boolean) {
    return this.send({ kind: 'probe_result', generation: this.state.generation, ready, detail: ready ? 'ok' : 'not yet' });
  }
  fire(name: string) {
    this.alarms.delete(name);
    return this.send({ kind: 'alarm', name });
  }
}

describe('InstanceCell core (pure)', () => {
  it('walks provision -> enrolling -> ready -> stop -> start -> destroy, owing exactly one effect at a time', () => {
    const c = new Cell();
    assert.equal(c.command(req('p1', 'provision')).status, 'dispatched');
    assert.equal(c.state.state, 'provisioning');
    assert.deepEqual(
      owedEffects(c.state).map((e) => e.kind),
      ['apply'],
    );
    c.result('p1', 'succeeded');
    assert.equal(c.state.state, 'enrolling');
    assert.equal(c.state.generation, 1);
    assert.deepEqual(
      owedEffects(c.state).map((e) => e.kind),
      ['probe'],
    );
    assert.ok(c.alarms.has('enroll_deadline'));
    c.probe(true);
    assert.equal(c.state.state, 'ready');
    assert.equal(c.alarms.size, 0);
    c.command(req('s1', 'stop'));
    assert.equal(c.state.state, 'stopping');
    c.result('s1', 'succeeded', obs(1, 'exited'));
    assert.equal(c.state.state, 'stopped');
    c.command(req('st1', 'start'));
    c.result('st1', 'succeeded');
    c.probe(true);
    assert.equal(c.state.state, 'ready');
    c.command(req('d1', 'destroy'));
    c.result('d1', 'succeeded', obs(1, 'removed'));
    assert.equal(c.state.state, 'destroyed');
    assert.equal(c.state.desired, 'destroyed');
    assert.deepEqual(owedEffects(c.state), []);
  });

  it('a repeated operation id answers the recorded status and owes nothing new', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    const before = structuredClone(c.state.operations);
    assert.equal(c.command(req('p1', 'provision')).status, 'pending', 'same id while in flight: pending');
    assert.deepEqual(c.state.operations, before);
    c.result('p1', 'succeeded');
    c.probe(true);
    const again = c.command(req('p1', 'provision'));
    assert.equal(again.status, 'succeeded');
    assert.deepEqual(owedEffects(c.state), []);
  });

  it('the same id with another request is rejected idempotency_mismatch and changes nothing', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    const state = structuredClone(c.state.operations);
    const r = c.command(req('p1', 'provision', 1, { spec: { ...spec, image: 'other' } }));
    assert.deepEqual([r.status, r.reason], ['rejected', 'idempotency_mismatch']);
    assert.deepEqual(c.state.operations, state);
  });

  it('rejects stale and future generations, and lifecycle commands for an unknown instance', () => {
    const c = new Cell();
    assert.equal(c.command(req('s0', 'stop')).reason, 'unknown_instance');
    assert.equal(c.command(req('p3', 'provision', 3)).reason, 'future_generation');
    c.command(req('p1', 'provision'));
    c.result('p1', 'succeeded');
    c.probe(true);
    assert.equal(c.command(req('s2', 'stop', 2)).reason, 'future_generation');
    assert.equal(c.command(req('p1b', 'provision', 1)).reason, 'stale_generation');
    assert.equal(c.command(req('p2', 'provision', 2)).reason, 'invalid_transition', 'generation 1 is live');
    c.command(req('d1', 'destroy'));
    c.result('d1', 'succeeded', obs(1, 'removed'));
    assert.equal(c.command(req('p2', 'provision', 2)).status, 'rejected', 'a rejected id stays rejected');
    assert.equal(c.command(req('p2b', 'provision', 2)).status, 'dispatched');
    c.result('p2b', 'succeeded', obs(2));
    c.probe(true);
    const stale = c.command(req('d-old', 'destroy', 1));
    assert.deepEqual([stale.status, stale.reason], ['rejected', 'stale_generation']);
    assert.deepEqual(owedEffects(c.state), [], 'a stale command never reaches management');
  });

  it('queues commands behind the one in flight and dispatches them in order', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    assert.equal(c.command(req('s1', 'stop')).status, 'pending');
    assert.equal(c.command(req('d1', 'destroy')).status, 'pending');
    assert.deepEqual(
      owedEffects(c.state).map((e) => e.kind === 'apply' && e.operation_id),
      ['p1'],
    );
    c.result('p1', 'succeeded');
    assert.deepEqual(
      owedEffects(c.state).map((e) => (e.kind === 'apply' ? e.operation_id : e.kind)),
      ['s1'],
      'the stop goes before any probe',
    );
    c.result('s1', 'succeeded', obs(1, 'exited'));
    c.result('d1', 'succeeded', obs(1, 'removed'));
    assert.equal(c.state.state, 'destroyed');
  });

  it('unknown outcome: backs off, then looks the same operation up (never a new identity)', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    c.result('p1', 'unknown', obs(1, 'absent'));
    assert.equal(c.state.state, 'unknown');
    assert.deepEqual(owedEffects(c.state), []);
    assert.equal(c.alarms.get('op:p1'), c.now + DEFAULT_CORE_SETTINGS.lookupBaseMs);
    c.fire('op:p1');
    assert.deepEqual(owedEffects(c.state), [{ kind: 'lookup', operation_id: 'p1' }]);
    c.result('p1', 'unknown');
    assert.equal(c.alarms.get('op:p1'), c.now + DEFAULT_CORE_SETTINGS.lookupBaseMs * 2, 'backoff doubles');
    c.fire('op:p1');
    c.result('p1', 'succeeded');
    assert.equal(c.state.state, 'enrolling');
    assert.equal(c.state.operations.length, 1);
  });

  it('not_found (management never got it): resend the same request under the same id', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    c.result('p1', 'unknown');
    c.fire('op:p1');
    c.result('p1', 'not_found', obs(0, 'absent'));
    const effects = owedEffects(c.state);
    assert.equal(effects.length, 1);
    assert.equal(effects[0]!.kind, 'apply');
    assert.equal(effects[0]!.kind === 'apply' && requestHash(effects[0]!.request), requestHash(req('p1', 'provision')));
  });

  it('a rejection by management restores the state before the operation', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    c.result('p1', 'succeeded');
    c.probe(true);
    c.command(req('s1', 'stop'));
    c.result('s1', 'rejected', obs(1), 'stale_generation');
    assert.equal(c.state.state, 'ready');
    assert.equal(c.state.operations.find((o) => o.operation_id === 's1')!.reason, 'stale_generation');
  });

  it('a failed provision is terminal: retrying needs a new id and the next generation', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    c.result('p1', 'failed', obs(1, 'absent'), 'image not found');
    assert.equal(c.state.state, 'failed');
    assert.match(c.state.last_error!, /image not found/);
    assert.equal(c.command(req('p1', 'provision')).status, 'failed', 'same id answers the recorded failure');
    assert.equal(c.command(req('p2', 'provision', 2)).status, 'dispatched');
  });

  it('enrollment: probes re-arm until ready; never ready by the deadline -> failed enrollment_timeout', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    c.result('p1', 'succeeded');
    c.probe(false);
    assert.equal(c.state.state, 'enrolling');
    assert.equal(c.alarms.get('probe'), c.now + 100);
    assert.deepEqual(owedEffects(c.state), []);
    c.now += 100;
    c.fire('probe');
    assert.deepEqual(owedEffects(c.state), [{ kind: 'probe', generation: 1 }]);
    c.now = c.state.enrollment!.deadline_at;
    c.fire('enroll_deadline');
    assert.equal(c.state.state, 'failed');
    assert.match(c.state.last_error!, /enrollment_timeout/);
    assert.equal(c.alarms.size, 0);
  });

  it('late and foreign results are ignored with evidence', () => {
    const c = new Cell();
    c.command(req('p1', 'provision'));
    c.result('p1', 'succeeded');
    const out = c.result('p1', 'failed');
    assert.equal(c.state.state, 'enrolling');
    assert.equal(out.evidence[0]!.event, 'late_result_ignored');
    assert.equal(c.result('nope', 'succeeded').evidence[0]!.event, 'late_result_ignored');
  });

  it('an observation refreshes a stale binding and the state it implies', () => {
    const c = new Cell();
    c.send({ kind: 'observe', observation: obs(3, 'running') });
    assert.equal(c.state.generation, 3);
    assert.equal(c.state.state, 'ready');
    c.send({ kind: 'observe', observation: obs(3, 'exited') });
    assert.equal(c.state.state, 'stopped');
    assert.equal(c.command(req('s-old', 'stop', 2)).reason, 'stale_generation');
  });

  it('every step writes evidence naming actor, generation and operation', () => {
    const c = new Cell();
    const out = c.send({ kind: 'command', request: req('p1', 'provision'), hash: requestHash(req('p1', 'provision')), spec });
    assert.ok(out.evidence.length >= 2);
    for (const e of out.evidence) {
      assert.equal(e.actor, 'test');
      assert.equal(e.operation_id, 'p1');
      assert.equal(e.generation, 1);
      assert.equal(e.source, 'cell');
    }
  });

  it('retention prunes finished operations beyond the configured count, never open ones', () => {
    let s = emptyCell('i1', 0);
    const settings = { ...DEFAULT_CORE_SETTINGS, retainFinished: 3 };
    const send = (input: CellInput) => (s = step(s, input, { now: 1, actor: 't' }, settings).state);
    const r1 = req('p1', 'provision');
    send({ kind: 'command', request: r1, hash: requestHash(r1), spec });
    for (let i = 0; i < 6; i++) {
      const r = req(`bad-${i}`, 'stop', 9);
      send({ kind: 'command', request: r, hash: requestHash(r), spec: null });
    }
    assert.equal(s.operations.filter((o) => o.status === 'rejected').length, 3);
    assert.ok(
      s.operations.some((o) => o.operation_id === 'p1'),
      'the open provision is kept',
    );
  });
});
