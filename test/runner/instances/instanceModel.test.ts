// Model-based test: fast-check drives random sequences of lifecycle commands, with
// duplicates, reordering (commands queue before they are driven), redelivery straight to
// the ledger and lost responses, against the real cell core, management, SQLite store and
// host instance provider. A small reference model predicts what must be rejected; the rest
// are invariants checked after every step.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InstanceSpecSchema, type OperationRequest, type OperationStatus } from '../../../runner/src/protocol/instanceCell.js';
import { LostResponseError } from '../../../runner/src/instances/management/faultPoints.js';
import { requestHash } from '../../../runner/src/instances/operationRequest.js';
import { HostInstanceProvider } from '../../../runner/src/instances/providers/hostInstanceProvider.js';
import { InstanceHarness } from '../../helpers/instanceHarness.js';

const INSTANCES = ['a', 'b'] as const;
const ACTIONS = ['provision', 'start', 'stop', 'destroy'] as const;
const spec = InstanceSpecSchema.parse({ provider: 'host', probe_interval_ms: 50, enroll_timeout_s: 10 });

interface Model {
  /** Highest generation whose provision the cell accepted, per instance. */
  maxGen: Record<string, number>;
  sent: Map<string, OperationRequest>;
  /** Terminal ledger outcomes seen: they may never change. */
  terminal: Map<string, OperationStatus>;
  nextOp: number;
}

interface Real {
  h: InstanceHarness;
  dropManagementAnswer: { armed: boolean };
}

const TERMINAL = new Set(['succeeded', 'failed', 'rejected']);

function checkInvariants(m: Model, r: Real): void {
  for (const [op, n] of r.h.providers.effectsPerOperation()) assert.ok(n <= 1, `operation ${op} made ${n} provider effects`);
  for (const [op, status] of m.terminal) assert.equal(r.h.store.operation(op)?.status, status, `terminal outcome of ${op} changed`);
  for (const row of r.h.db
    .prepare("SELECT operation_id, status FROM operations WHERE status IN ('succeeded','failed','rejected')")
    .all() as Array<{ operation_id: string; status: OperationStatus }>) {
    m.terminal.set(row.operation_id, row.status);
  }
  // Ground truth: every process start an instance journal records is one create/start effect.
  const host = new HostInstanceProvider({ stateDir: r.h.stateDir });
  for (const inst of r.h.store.instances()) {
    for (let g = 1; g <= inst.generation; g++) {
      const effects = r.h.providers.calls.filter(
        (c) => c.instance_id === inst.instance_id && c.generation === g && (c.method === 'create' || c.method === 'start') && c.changed,
      );
      const starts = host.journal(inst.instance_id, g).filter((l) => l.startsWith('start')).length;
      assert.equal(starts, effects.length, `${inst.instance_id} g${g}: ${starts} process starts for ${effects.length} start effects`);
    }
  }
}

class Submit implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly instance: string,
    readonly action: (typeof ACTIONS)[number],
    readonly genDelta: number,
    readonly reuse: 'new' | 'same' | 'other',
    readonly pick: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const sent = [...m.sent.values()];
    let request: OperationRequest;
    let expectMismatch = false;
    if (this.reuse !== 'new' && sent.length > 0) {
      const prior = sent[this.pick % sent.length]!;
      if (this.reuse === 'same') request = prior;
      else {
        request = { ...prior, action: prior.action === 'stop' ? 'destroy' : 'stop', payload: {} };
        expectMismatch = true;
      }
    } else {
      const gen = Math.max(1, (m.maxGen[this.instance] ?? 0) + this.genDelta + (this.action === 'provision' ? 1 : 0));
      request = {
        operation_id: `op-${m.nextOp++}`,
        instance_id: this.instance,
        generation: gen,
        action: this.action,
        payload: this.action === 'provision' ? { spec } : {},
      };
      m.sent.set(request.operation_id, request);
    }
    const callsBefore = r.h.providers.calls.length;
    const known = r.h.db.prepare('SELECT 1 FROM cell_state WHERE instance_id = ?').get(request.instance_id)
      ? ((await r.h.coordinator.cells.read(request.instance_id))?.operations.find((o) => o.operation_id === request.operation_id) ?? null)
      : null;
    const reply = await r.h.coordinator.submit(request);
    assert.equal(r.h.providers.calls.length, callsBefore, 'submitting never calls a provider by itself');
    if (expectMismatch) {
      assert.deepEqual([reply.status, reply.reason], ['rejected', 'idempotency_mismatch']);
      return;
    }
    if (known) {
      assert.equal(
        reply.status,
        TERMINAL.has(known.status) ? known.status : 'pending',
        'a repeat answers the recorded outcome, or pending while in flight',
      );
      return;
    }
    const maxGen = m.maxGen[request.instance_id] ?? 0;
    if (request.generation < maxGen)
      assert.deepEqual([reply.status, reply.reason], ['rejected', 'stale_generation'], `gen ${request.generation} < ${maxGen}`);
    if (request.action !== 'provision' && request.generation > maxGen) assert.equal(reply.status, 'rejected');
    if (request.action === 'provision' && reply.status !== 'rejected') m.maxGen[request.instance_id] = Math.max(maxGen, request.generation);
    checkInvariants(m, r);
  }
  toString = () => `submit(${this.instance} ${this.action} d${this.genDelta} ${this.reuse}#${this.pick})`;
}

class Redeliver implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.sent.size > 0;
  async run(m: Model, r: Real): Promise<void> {
    // A transport duplicate: only of operations the cell has handed to management (or refused).
    const handed = [];
    for (const req of m.sent.values()) {
      const op = (await r.h.coordinator.cells.read(req.instance_id))?.operations.find((o) => o.operation_id === req.operation_id);
      if (op && op.status !== 'pending') handed.push(req);
    }
    if (handed.length === 0) return;
    const request = handed[this.pick % handed.length]!;
    const before = r.h.store.operation(request.operation_id);
    let result;
    try {
      result = await r.h.management.apply(request, requestHash(request));
    } catch (e) {
      if (!(e instanceof LostResponseError)) throw e;
      return checkInvariants(m, r);
    }
    if (before && TERMINAL.has(before.status)) assert.equal(result.outcome, before.status, 'a terminal operation answers its outcome');
    checkInvariants(m, r);
  }
  toString = () => `redeliver(#${this.pick})`;
}

class LoseNextAnswer implements fc.AsyncCommand<Model, Real> {
  constructor(readonly where: 'provider' | 'management') {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    if (this.where === 'management') r.dropManagementAnswer.armed = true;
    else r.h.providers.dropNextAnswer.add(`op-${m.nextOp}`);
  }
  toString = () => `lose-next-${this.where}-answer`;
}

class Drive implements fc.AsyncCommand<Model, Real> {
  constructor(readonly instance: string) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    if (!(await r.h.coordinator.cells.read(this.instance))) return;
    const out = await r.h.coordinator.drive(this.instance, { timeoutMs: 15_000 });
    assert.ok(out.settled, `${this.instance} did not settle: ${out.state.state}`);
    const open = out.state.operations.filter((o) => !TERMINAL.has(o.status));
    assert.deepEqual(open, [], 'nothing left open after settling');
    const inv = r.h.store.instance(this.instance);
    if (inv) {
      const obs = await r.h.management.refresh(this.instance);
      assert.equal(out.state.generation, inv.generation, 'the cell is bound to the generation management observed');
      const rt = obs!.runtime_state;
      const consistent: Record<string, string[]> = {
        ready: ['running'],
        stopped: ['exited', 'created'],
        destroyed: ['removed', 'absent'],
        failed: ['absent', 'exited', 'running', 'removed', 'created'],
      };
      assert.ok(consistent[out.state.state]?.includes(rt), `cell ${out.state.state} but runtime ${rt}`);
    }
    checkInvariants(m, r);
  }
  toString = () => `drive(${this.instance})`;
}

describe('instance lifecycle, model-based (fast-check; real core, ledger, SQLite and host processes)', function () {
  this.timeout(600_000);

  const stats = { runs: 0, effects: 0, commands: 0 };
  after(() => console.log(`      ${stats.runs} runs, ${stats.commands} commands, ${stats.effects} provider effects`));

  it('random commands with duplicates, reordering and lost responses keep every ledger invariant', async () => {
    const inst = fc.constantFrom(...INSTANCES);
    const submit = fc
      .tuple(
        inst,
        fc.constantFrom(...ACTIONS),
        fc.integer({ min: -1, max: 1 }),
        fc.constantFrom('new', 'new', 'new', 'same', 'other') as fc.Arbitrary<'new' | 'same' | 'other'>,
        fc.nat(50),
      )
      .map(([i, a, d, reuse, pick]) => new Submit(i, a, d, reuse, pick));
    const provisionFirst = inst.map((i) => new Submit(i, 'provision', 0, 'new', 0));
    const commands = [
      submit,
      submit,
      submit,
      provisionFirst,
      fc.nat(50).map((p) => new Redeliver(p)),
      fc.constantFrom('provider', 'management').map((w) => new LoseNextAnswer(w as 'provider' | 'management')),
      inst.map((i) => new Drive(i)),
      inst.map((i) => new Drive(i)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'large' }), async (cmds) => {
        const drop = { armed: false };
        const h = new InstanceHarness({
          faults: (p) => {
            if (p === 'drop_response' && drop.armed) {
              drop.armed = false;
              throw new LostResponseError('model: answer lost');
            }
          },
        });
        const model: Model = { maxGen: {}, sent: new Map(), terminal: new Map(), nextOp: 0 };
        try {
          await fc.asyncModelRun(() => ({ model, real: { h, dropManagementAnswer: drop } }), cmds);
          // Finally everything settles, and each host runtime's journal shows no duplicate effect.
          for (const i of INSTANCES) await new Drive(i).run(model, { h, dropManagementAnswer: drop });
          for (const [op, n] of h.providers.effectsPerOperation()) assert.ok(n <= 1, `${op}: ${n} effects`);
          stats.runs++;
          stats.effects += h.providers.calls.filter((c) => c.changed).length;
          stats.commands += [...cmds].length;
        } finally {
          await h.cleanup();
        }
      }),
      { numRuns: process.env.FORGE_MODEL_RUNS ? Number(process.env.FORGE_MODEL_RUNS) : 25 },
    );
  });
});
