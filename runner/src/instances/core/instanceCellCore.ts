import {
  type CellInput,
  type CellOperation,
  type CellStateName,
  type CommandReply,
  type EffectResult,
  type Evidence,
  type InstanceCellState,
  type InstanceSpec,
  type Observation,
  type OperationRequest,
  PROTOCOL_VERSION,
} from '../../protocol/instanceCell.js';

/**
 * The InstanceCell core: pure. (state, input) -> (new state, reply, alarm changes, evidence).
 * It runs unchanged embedded in the runner (state in SQLite) and inside the Durable Objects
 * worker (state in ctx.storage.sql). The effects a cell owes management are derived from its
 * state (`owedEffects`), so a host that crashes after persisting a step re-derives them.
 */

export type { CellInput };

export interface StepContext {
  now: number;
  actor: string;
}

/** due_at null cancels the alarm of that name. */
export interface AlarmChange {
  name: string;
  due_at: number | null;
  attempt: number;
}

export interface StepOutput {
  state: InstanceCellState;
  reply: CommandReply | null;
  alarms: AlarmChange[];
  evidence: Evidence[];
}

export type CellEffect =
  | { kind: 'apply'; operation_id: string; request: OperationRequest }
  | { kind: 'lookup'; operation_id: string }
  | { kind: 'probe'; generation: number };

export interface CoreSettings {
  /** Finished operations are kept this long (ms) for replay, then pruned. */
  retentionMs: number;
  /** And at most this many finished ones. */
  retainFinished: number;
  /** Backoff for looking up an operation whose outcome is unknown. */
  lookupBaseMs: number;
  lookupMaxMs: number;
}

export const DEFAULT_CORE_SETTINGS: CoreSettings = {
  retentionMs: 30 * 24 * 3600 * 1000,
  retainFinished: 1000,
  lookupBaseMs: 250,
  lookupMaxMs: 30_000,
};

const TERMINAL = new Set(['succeeded', 'failed', 'rejected']);

export function isTerminal(op: Pick<CellOperation, 'status'>): boolean {
  return TERMINAL.has(op.status);
}

export function emptyCell(instanceId: string, now: number): InstanceCellState {
  return {
    schema: PROTOCOL_VERSION,
    instance_id: instanceId,
    generation: 0,
    state: 'requested',
    desired: null,
    spec: null,
    observed: null,
    operations: [],
    enrollment: null,
    last_error: null,
    updated_at: now,
  };
}

export function lookupBackoff(attempt: number, s: CoreSettings = DEFAULT_CORE_SETTINGS): number {
  return Math.min(s.lookupMaxMs, s.lookupBaseMs * 2 ** Math.min(attempt, 20));
}

/** What the host must do for this cell now: submit, look up, or probe. */
export function owedEffects(state: InstanceCellState): CellEffect[] {
  const effects: CellEffect[] = [];
  for (const op of state.operations) {
    if (op.next === 'apply') effects.push({ kind: 'apply', operation_id: op.operation_id, request: op.request });
    else if (op.next === 'lookup') effects.push({ kind: 'lookup', operation_id: op.operation_id });
  }
  if (state.state === 'enrolling' && state.enrollment?.probe_due) effects.push({ kind: 'probe', generation: state.generation });
  return effects;
}

export function activeOperation(state: InstanceCellState): CellOperation | undefined {
  return state.operations.find((o) => o.status === 'dispatched' || o.status === 'unknown');
}

export function step(
  prev: InstanceCellState,
  input: CellInput,
  ctx: StepContext,
  settings: CoreSettings = DEFAULT_CORE_SETTINGS,
): StepOutput {
  const s = new Stepper(structuredClone(prev), ctx, settings);
  switch (input.kind) {
    case 'command':
      s.command(input.request, input.hash, input.spec);
      break;
    case 'effect_result':
      s.effectResult(input.result);
      break;
    case 'probe_result':
      s.probeResult(input.generation, input.ready, input.detail);
      break;
    case 'alarm':
      s.alarm(input.name);
      break;
    case 'observe':
      s.observe(input.observation);
      break;
  }
  return s.output();
}

const TARGET: Record<OperationRequest['action'], 'ready' | 'stopped' | 'destroyed'> = {
  provision: 'ready',
  start: 'ready',
  stop: 'stopped',
  destroy: 'destroyed',
};

const IN_FLIGHT_STATE: Record<OperationRequest['action'], CellStateName> = {
  provision: 'provisioning',
  start: 'provisioning',
  stop: 'stopping',
  destroy: 'stopping',
};

class Stepper {
  private reply: CommandReply | null = null;
  private readonly alarms: AlarmChange[] = [];
  private readonly evidence: Evidence[] = [];

  constructor(
    private readonly st: InstanceCellState,
    private readonly ctx: StepContext,
    private readonly settings: CoreSettings,
  ) {}

  output(): StepOutput {
    this.st.updated_at = this.ctx.now;
    this.prune();
    return { state: this.st, reply: this.reply, alarms: this.alarms, evidence: this.evidence };
  }

  command(request: OperationRequest, hash: string, spec: InstanceSpec | null): void {
    const existing = this.st.operations.find((o) => o.operation_id === request.operation_id);
    if (existing) {
      if (existing.request_hash !== hash) {
        this.record(
          'command_rejected',
          request.operation_id,
          request.generation,
          null,
          null,
          `idempotency_mismatch: operation ${request.operation_id} was already used for a different request`,
        );
        this.answer(
          request,
          'rejected',
          'idempotency_mismatch',
          `operation ${request.operation_id} was already used for a different request; use a new operation id`,
        );
      } else {
        const inFlight = !isTerminal(existing);
        this.answer(
          request,
          inFlight ? 'pending' : existing.status,
          existing.reason,
          inFlight
            ? `repeat of an operation in flight (${existing.status}): no new effect`
            : 'repeat of a recorded operation: no new effect',
        );
      }
      return;
    }
    const refusal = this.refusal(request, spec);
    const op: CellOperation = {
      operation_id: request.operation_id,
      request_hash: hash,
      action: request.action,
      generation: request.generation,
      request,
      status: 'pending',
      from_state: this.st.state,
      reason: null,
      next: null,
      attempts: 0,
      accepted_at: this.ctx.now,
      finished_at: null,
    };
    this.st.operations.push(op);
    if (refusal) {
      op.status = 'rejected';
      op.reason = refusal.reason;
      op.finished_at = this.ctx.now;
      this.record('command_rejected', op.operation_id, op.generation, null, null, `${refusal.reason}: ${refusal.detail}`);
      this.answer(request, 'rejected', refusal.reason, refusal.detail);
      return;
    }
    if (request.action === 'provision') this.st.spec = spec;
    this.st.desired = TARGET[request.action];
    this.record('command_accepted', op.operation_id, op.generation, null, null, `${request.action} generation ${request.generation}`);
    this.dispatchNext();
    this.answer(request, op.status, null, op.status === 'pending' ? 'queued behind the operation in flight' : 'accepted');
  }

  /** Cell-side validation; management checks generation again before any provider call. */
  private refusal(request: OperationRequest, spec: InstanceSpec | null): { reason: string; detail: string } | null {
    const current = this.latestGeneration();
    if (request.generation < current) {
      return { reason: 'stale_generation', detail: `generation ${request.generation} is older than the current generation ${current}` };
    }
    if (request.action === 'provision') {
      if (!spec) return { reason: 'invalid_transition', detail: 'provision needs an instance spec in its payload' };
      if (request.generation > current + 1)
        return {
          reason: 'future_generation',
          detail: `generation ${request.generation} skips ahead of ${current}; provision generation ${current + 1}`,
        };
      if (request.generation === current)
        return {
          reason: 'stale_generation',
          detail: `generation ${current} already exists; provision generation ${current + 1} for a new incarnation`,
        };
      if (current > 0 && this.projectedDesired() !== 'destroyed' && this.st.state !== 'failed' && this.st.state !== 'destroyed') {
        return {
          reason: 'invalid_transition',
          detail: `generation ${current} is still live; destroy it before provisioning generation ${request.generation}`,
        };
      }
      return null;
    }
    if (current === 0) return { reason: 'unknown_instance', detail: `instance ${request.instance_id} has not been provisioned` };
    if (request.generation > current)
      return {
        reason: 'future_generation',
        detail: `generation ${request.generation} has not been created and observed (current ${current})`,
      };
    if (request.action !== 'destroy' && this.projectedDesired() === 'destroyed') {
      return { reason: 'invalid_transition', detail: `instance ${request.instance_id} generation ${current} is destroyed` };
    }
    return null;
  }

  /** Includes accepted generations not yet observed, so commands queue consistently. */
  private latestGeneration(): number {
    let g = this.st.generation;
    for (const o of this.st.operations)
      if (o.action === 'provision' && o.status !== 'rejected' && o.status !== 'failed') g = Math.max(g, o.generation);
    return g;
  }

  private projectedDesired(): InstanceCellState['desired'] {
    return this.st.desired;
  }

  private dispatchNext(): void {
    if (activeOperation(this.st)) return;
    const next = this.st.operations.find((o) => o.status === 'pending');
    if (!next) return;
    next.status = 'dispatched';
    next.next = 'apply';
    next.from_state = this.st.state;
    this.transition(IN_FLIGHT_STATE[next.action], next, 'effect_dispatched');
  }

  effectResult(result: EffectResult): void {
    const op = this.st.operations.find((o) => o.operation_id === result.operation_id);
    if (!op || isTerminal(op)) {
      this.record(
        'late_result_ignored',
        result.operation_id,
        op?.generation ?? this.st.generation,
        null,
        null,
        `${result.outcome} for an operation that is ${op ? op.status : 'not recorded'}`,
      );
      return;
    }
    if (op.status === 'pending') {
      this.record(
        'late_result_ignored',
        op.operation_id,
        op.generation,
        null,
        null,
        `${result.outcome} for an operation not yet dispatched`,
      );
      return;
    }
    if (result.observation) this.applyObservation(result.observation, false);
    this.alarms.push({ name: `op:${op.operation_id}`, due_at: null, attempt: 0 });
    switch (result.outcome) {
      case 'succeeded':
        this.finish(op, 'succeeded', null);
        this.succeeded(op);
        break;
      case 'failed':
        this.finish(op, 'failed', result.reason);
        this.st.last_error = `${op.action} generation ${op.generation} failed: ${result.reason ?? 'no reason given'}`;
        this.transition(op.action === 'provision' || op.action === 'start' ? 'failed' : this.stateFromObservation(), op, 'effect_failed');
        break;
      case 'rejected':
        this.finish(op, 'rejected', result.reason);
        this.transition(op.from_state, op, 'effect_rejected');
        break;
      case 'unknown': {
        op.status = 'unknown';
        op.next = null;
        op.attempts += 1;
        const due = this.ctx.now + lookupBackoff(op.attempts - 1, this.settings);
        this.alarms.push({ name: `op:${op.operation_id}`, due_at: due, attempt: op.attempts });
        this.transition('unknown', op, 'effect_outcome_unknown');
        return;
      }
      case 'not_found':
        // Management never recorded it: resend under the same identity (never a new one).
        op.status = 'dispatched';
        op.next = 'apply';
        this.transition(IN_FLIGHT_STATE[op.action], op, 'effect_resubmitted');
        return;
    }
    this.dispatchNext();
  }

  private succeeded(op: CellOperation): void {
    if (op.generation > this.st.generation) this.st.generation = op.generation;
    if (op.action === 'provision' || op.action === 'start') {
      const spec = this.st.spec;
      const timeoutMs = (spec?.enroll_timeout_s ?? 60) * 1000;
      this.st.enrollment = { deadline_at: this.ctx.now + timeoutMs, probes: 0, probe_due: true };
      this.alarms.push({ name: 'enroll_deadline', due_at: this.ctx.now + timeoutMs, attempt: 0 });
      this.st.last_error = null;
      this.transition('enrolling', op, 'effect_succeeded');
    } else {
      this.st.enrollment = null;
      this.alarms.push({ name: 'probe', due_at: null, attempt: 0 }, { name: 'enroll_deadline', due_at: null, attempt: 0 });
      this.transition(op.action === 'stop' ? 'stopped' : 'destroyed', op, 'effect_succeeded');
    }
  }

  probeResult(generation: number, ready: boolean, detail: string): void {
    const enr = this.st.enrollment;
    if (this.st.state !== 'enrolling' || !enr || generation !== this.st.generation) {
      this.record('late_probe_ignored', null, generation, null, null, detail);
      return;
    }
    enr.probes += 1;
    enr.probe_due = false;
    if (ready) {
      this.st.enrollment = null;
      this.alarms.push({ name: 'probe', due_at: null, attempt: 0 }, { name: 'enroll_deadline', due_at: null, attempt: 0 });
      this.transition('ready', null, 'enrolled', detail);
    } else if (this.ctx.now >= enr.deadline_at) {
      this.enrollmentTimedOut(detail);
    } else {
      const interval = this.st.spec?.probe_interval_ms ?? 500;
      this.alarms.push({ name: 'probe', due_at: Math.min(enr.deadline_at, this.ctx.now + interval), attempt: enr.probes });
    }
  }

  private enrollmentTimedOut(detail: string): void {
    const probes = this.st.enrollment?.probes ?? 0;
    this.st.enrollment = null;
    this.st.last_error = `enrollment_timeout: not ready after ${probes} probes (${detail}); retry with a new operation id (start), or destroy`;
    this.alarms.push({ name: 'probe', due_at: null, attempt: 0 }, { name: 'enroll_deadline', due_at: null, attempt: 0 });
    this.transition('failed', null, 'enrollment_timeout', detail);
  }

  alarm(name: string): void {
    if (name === 'probe') {
      if (this.st.state === 'enrolling' && this.st.enrollment) this.st.enrollment.probe_due = true;
      return;
    }
    if (name === 'enroll_deadline') {
      if (this.st.state === 'enrolling' && this.st.enrollment && this.ctx.now >= this.st.enrollment.deadline_at)
        this.enrollmentTimedOut('deadline passed');
      return;
    }
    if (name.startsWith('op:')) {
      const op = this.st.operations.find((o) => o.operation_id === name.slice(3));
      if (op && op.status === 'unknown') {
        op.next = 'lookup';
        this.record('lookup_due', op.operation_id, op.generation, null, null, `attempt ${op.attempts}`);
      }
    }
  }

  observe(observation: Observation): void {
    this.applyObservation(observation, true);
  }

  /**
   * Refreshes the cell's observation (management is the authority on observed truth) and,
   * when asked, the state it implies. A newer observed generation refreshes a stale binding.
   */
  private applyObservation(obs: Observation, deriveState: boolean): void {
    const before = this.st.observed;
    this.st.observed = obs;
    if (obs.generation > this.st.generation) {
      this.record('binding_refreshed', null, obs.generation, null, null, `generation ${this.st.generation} -> ${obs.generation}`);
      this.st.generation = obs.generation;
    }
    if (!deriveState || activeOperation(this.st)) return;
    const implied = this.stateFromObservation();
    if (implied !== this.st.state && !(implied === 'ready' && this.st.state === 'enrolling')) {
      if (this.st.desired === 'ready' && implied !== 'ready') this.st.last_error = `runtime is ${obs.runtime_state} while desired ready`;
      this.transition(implied, null, 'observed', `${before?.runtime_state ?? 'nothing'} -> ${obs.runtime_state}`);
    }
  }

  private stateFromObservation(): CellStateName {
    const obs = this.st.observed;
    if (!obs) return 'unknown';
    switch (obs.runtime_state) {
      case 'running':
        return this.st.state === 'enrolling' ? 'enrolling' : 'ready';
      case 'created':
      case 'exited':
        return 'stopped';
      case 'removed':
        return 'destroyed';
      case 'absent':
        return this.st.desired === 'destroyed' ? 'destroyed' : 'failed';
    }
  }

  private finish(op: CellOperation, status: 'succeeded' | 'failed' | 'rejected', reason: string | null): void {
    op.status = status;
    op.reason = reason;
    op.next = null;
    op.finished_at = this.ctx.now;
  }

  private transition(to: CellStateName, op: CellOperation | null, event: string, detail: string | null = null): void {
    const from = this.st.state;
    this.st.state = to;
    this.record(event, op?.operation_id ?? null, op?.generation ?? this.st.generation, from, to, detail);
  }

  private record(
    event: string,
    operationId: string | null,
    generation: number,
    from: string | null,
    to: string | null,
    detail: string | null,
  ): void {
    this.evidence.push({
      at: this.ctx.now,
      source: 'cell',
      actor: this.ctx.actor,
      instance_id: this.st.instance_id,
      operation_id: operationId,
      generation,
      event,
      from_state: from,
      to_state: to,
      detail,
    });
  }

  private answer(request: OperationRequest, status: CommandReply['status'], reason: string | null, detail: string | null): void {
    this.reply = {
      operation_id: request.operation_id,
      instance_id: request.instance_id,
      status,
      reason,
      detail,
      state: this.st.state,
      generation: this.st.generation,
    };
  }

  private prune(): void {
    const finished = this.st.operations.filter(isTerminal);
    const cutoff = this.ctx.now - this.settings.retentionMs;
    const excess = finished.length - this.settings.retainFinished;
    const drop = new Set<CellOperation>();
    finished.forEach((o, i) => {
      if (i < excess || (o.finished_at ?? 0) < cutoff) drop.add(o);
    });
    if (drop.size) this.st.operations = this.st.operations.filter((o) => !drop.has(o));
  }
}
