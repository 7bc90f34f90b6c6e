import { hostname } from 'node:os';
import {
  type EffectResult,
  type Evidence,
  type InstanceSpec,
  InstanceSpecSchema,
  type Observation,
  type OperationRequest,
} from '../../protocol/instanceCell.js';
import { admitOperation } from '../admitOperation.js';
import type { InstanceProviders } from '../providers/instanceProviderRegistry.js';
import { NOT_BUILT } from '../providers/instanceProviderRegistry.js';
import { type InstanceProvider, type InstanceRef, isUnreachable } from '../providers/instanceProvider.js';
import { type FaultInjector, noFaults } from './faultPoints.js';
import type { InstanceRow, LedgerStore, OperationRow } from './ledgerStore.js';

export interface ManagementOptions {
  actor?: string;
  faults?: FaultInjector;
  now?: () => number;
  /** Is the runner process that owns a dispatched operation still alive? */
  isOwnerAlive?: (host: string | null, pid: number | null) => boolean;
}

/**
 * Management: the inventory (observed truth, generation authority) and the idempotent
 * lifecycle effect service. Every operation id is bound to one request hash; the provider
 * is called at most once per operation to make its effect, and a restart or a lost answer
 * is resolved by re-driving the same idempotent effect under the same identity (which the
 * provider turns into an inspection when the effect already happened).
 */
export class Management {
  private readonly actor: string;
  private readonly faults: FaultInjector;
  private readonly now: () => number;
  private readonly isOwnerAlive: (host: string | null, pid: number | null) => boolean;
  /** Operations this process is executing right now. */
  private readonly executing = new Set<string>();

  constructor(
    readonly store: LedgerStore,
    private readonly providers: InstanceProviders,
    options: ManagementOptions = {},
  ) {
    this.actor = options.actor ?? `management@${hostname()}:${process.pid}`;
    this.faults = options.faults ?? noFaults;
    this.now = options.now ?? Date.now;
    this.isOwnerAlive = options.isOwnerAlive ?? defaultOwnerAlive;
  }

  /** Submit an operation (first delivery or any repeat). */
  async apply(request: OperationRequest, hash: string): Promise<EffectResult> {
    const decision = this.store.tx(() => this.admit(request, hash));
    if (decision.kind !== 'execute') return decision.result;
    const result = await this.execute(decision.row);
    this.faults('drop_response');
    return result;
  }

  /** Records a rejection decided by the cell, so the ledger answers that id the same way. */
  recordRejection(request: OperationRequest, hash: string, reason: string, detail: string | null): void {
    this.store.tx(() => {
      if (this.store.operation(request.operation_id)) return;
      const now = this.now();
      this.store.insertOperation(this.newRow(request, hash, 'rejected', reason, now, now));
      this.evidence({
        instance_id: request.instance_id,
        operation_id: request.operation_id,
        generation: request.generation,
        event: 'rejected',
        from_state: null,
        to_state: 'rejected',
        detail: `by the cell: ${reason}${detail ? `: ${detail}` : ''}`,
      });
    });
  }

  /** Query an operation by id; an orphaned or unknown one is resolved under its own identity. */
  async lookup(operationId: string): Promise<EffectResult> {
    const row = this.store.operation(operationId);
    if (!row) return { operation_id: operationId, outcome: 'not_found', reason: null, observation: null };
    if (isTerminal(row.status)) return this.recorded(row);
    const claimed = this.store.tx(() => this.claimOrphan(operationId));
    if (!claimed)
      return {
        operation_id: operationId,
        outcome: 'unknown',
        reason: 'in flight in another runner process',
        observation: this.observation(row.instance_id),
      };
    return this.execute(claimed);
  }

  /** Re-read the runtime and refresh the inventory (evidence when it changed). */
  async refresh(instanceId: string): Promise<Observation | null> {
    const inst = this.store.instance(instanceId);
    if (!inst) return null;
    const provider = this.providers.get(inst.provider as InstanceProvider['name']);
    if (!provider) return rowObservation(inst);
    let obs = await provider.inspect(instanceId, inst.generation);
    if (obs.runtime_state === 'absent' && inst.runtime_state === 'removed') obs = { ...obs, runtime_state: 'removed' };
    if (obs.runtime_state !== inst.runtime_state || obs.runtime_id !== inst.runtime_id) {
      this.store.tx(() => {
        this.store.observe(instanceId, obs, this.now());
        this.evidence({
          instance_id: instanceId,
          operation_id: null,
          generation: inst.generation,
          event: 'observed',
          from_state: inst.runtime_state,
          to_state: obs.runtime_state,
          detail: obs.runtime_id,
        });
      });
    }
    return obs;
  }

  async probe(instanceId: string, generation: number): Promise<{ ready: boolean; detail: string }> {
    const inst = this.store.instance(instanceId);
    if (!inst || inst.generation !== generation) return { ready: false, detail: `generation ${generation} is not the current incarnation` };
    const provider = this.providers.get(inst.provider as InstanceProvider['name']);
    if (!provider) return { ready: false, detail: `provider ${inst.provider} unavailable` };
    const spec = InstanceSpecSchema.parse(JSON.parse(inst.spec_json));
    try {
      return await provider.probe({ instance_id: instanceId, generation, operation_id: '', spec });
    } catch (e) {
      return { ready: false, detail: `probe failed: ${(e as Error).message}` };
    }
  }

  observation(instanceId: string): Observation | null {
    const inst = this.store.instance(instanceId);
    return inst ? rowObservation(inst) : null;
  }

  private admit(
    request: OperationRequest,
    hash: string,
  ): { kind: 'execute'; row: OperationRow } | { kind: 'answer'; result: EffectResult } {
    const now = this.now();
    const existing = this.store.operation(request.operation_id);
    const inst = this.store.instance(request.instance_id);
    const admission = admitOperation(request, hash, existing, inst ? inst.generation : null);
    const observation = inst ? rowObservation(inst) : null;
    if (admission.kind === 'replay') return { kind: 'answer', result: this.recorded(existing!) };
    if (admission.kind === 'in_flight') {
      if (
        existing!.status === 'dispatched' &&
        !this.executing.has(existing!.operation_id) &&
        !this.isOwnerAlive(existing!.owner_host, existing!.owner_pid)
      ) {
        // Its runner died mid-effect: resolve it now, under the same identity.
        return { kind: 'execute', row: this.claim(existing!, now) };
      }
      if (existing!.status === 'unknown' && !this.executing.has(existing!.operation_id))
        return { kind: 'execute', row: this.claim(existing!, now) };
      return { kind: 'answer', result: { operation_id: request.operation_id, outcome: 'unknown', reason: 'in flight', observation } };
    }
    const refusal =
      admission.kind === 'reject' && admission.reason === 'idempotency_mismatch'
        ? { reason: admission.reason, detail: admission.detail }
        : !inst && request.action !== 'provision'
          ? { reason: 'unknown_instance', detail: `instance ${request.instance_id} has not been provisioned` }
          : admission.kind === 'reject'
            ? { reason: admission.reason, detail: admission.detail }
            : this.validate(request, inst);
    if (refusal) {
      if (refusal.reason === 'idempotency_mismatch') {
        this.evidence({
          instance_id: request.instance_id,
          operation_id: request.operation_id,
          generation: request.generation,
          event: 'rejected',
          from_state: null,
          to_state: null,
          detail: `${refusal.reason}: ${refusal.detail}`,
        });
        return { kind: 'answer', result: { operation_id: request.operation_id, outcome: 'rejected', reason: refusal.reason, observation } };
      }
      this.store.insertOperation(this.newRow(request, hash, 'rejected', refusal.reason, now, now));
      this.evidence({
        instance_id: request.instance_id,
        operation_id: request.operation_id,
        generation: request.generation,
        event: 'rejected',
        from_state: null,
        to_state: 'rejected',
        detail: `${refusal.reason}: ${refusal.detail}`,
      });
      return { kind: 'answer', result: { operation_id: request.operation_id, outcome: 'rejected', reason: refusal.reason, observation } };
    }
    if (request.action === 'provision') {
      const spec = InstanceSpecSchema.parse(request.payload.spec);
      this.store.upsertInstance({
        instance_id: request.instance_id,
        provider: spec.provider,
        generation: request.generation,
        runtime_state: 'absent',
        runtime_id: null,
        spec_json: JSON.stringify(spec),
        created_at: inst?.created_at ?? now,
        updated_at: now,
      });
      this.evidence({
        instance_id: request.instance_id,
        operation_id: request.operation_id,
        generation: request.generation,
        event: 'incarnation_created',
        from_state: inst ? `generation ${inst.generation}` : null,
        to_state: `generation ${request.generation}`,
        detail: spec.provider,
      });
    }
    const row = this.newRow(request, hash, 'dispatched', null, now, null);
    this.store.insertOperation(row);
    this.executing.add(row.operation_id);
    this.evidence({
      instance_id: request.instance_id,
      operation_id: request.operation_id,
      generation: request.generation,
      event: 'dispatched',
      from_state: null,
      to_state: 'dispatched',
      detail: request.action,
    });
    return { kind: 'execute', row };
  }

  /** Management's own checks, after generation admission and before any provider call. */
  private validate(request: OperationRequest, inst: InstanceRow | null): { reason: string; detail: string } | null {
    if (request.action === 'provision') {
      const parsed = InstanceSpecSchema.safeParse(request.payload.spec);
      if (!parsed.success) return { reason: 'invalid_request', detail: `payload.spec: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
      const notBuilt = NOT_BUILT[parsed.data.provider];
      if (notBuilt || !this.providers.get(parsed.data.provider))
        return { reason: 'provider_unavailable', detail: notBuilt ?? `provider ${parsed.data.provider} unavailable` };
      if (inst && inst.runtime_state !== 'absent' && inst.runtime_state !== 'removed') {
        return {
          reason: 'invalid_transition',
          detail: `generation ${inst.generation} still has a runtime (${inst.runtime_state}); destroy it first`,
        };
      }
      return null;
    }
    if (!inst) return { reason: 'unknown_instance', detail: `instance ${request.instance_id} has not been provisioned` };
    if (request.action === 'start' && inst.runtime_state === 'removed')
      return { reason: 'invalid_transition', detail: `generation ${inst.generation} was destroyed` };
    if (!this.providers.get(inst.provider as InstanceProvider['name']))
      return { reason: 'provider_unavailable', detail: `provider ${inst.provider} unavailable` };
    return null;
  }

  private claimOrphan(operationId: string): OperationRow | null {
    const row = this.store.operation(operationId);
    if (!row || isTerminal(row.status) || this.executing.has(operationId)) return null;
    if (row.status === 'dispatched' && this.isOwnerAlive(row.owner_host, row.owner_pid)) return null;
    return this.claim(row, this.now());
  }

  private claim(row: OperationRow, now: number): OperationRow {
    this.store.updateOperation(row.operation_id, { status: 'dispatched', owner_host: hostname(), owner_pid: process.pid }, now);
    this.executing.add(row.operation_id);
    this.evidence({
      instance_id: row.instance_id,
      operation_id: row.operation_id,
      generation: row.generation,
      event: 'redriven',
      from_state: row.status,
      to_state: 'dispatched',
      detail: 'resolving under the same operation id (the provider effect is idempotent for its incarnation)',
    });
    return { ...row, status: 'dispatched' };
  }

  /** Calls the provider (outside any transaction) and records the outcome. */
  private async execute(row: OperationRow): Promise<EffectResult> {
    try {
      this.faults('ledger_dispatched');
      const inst = this.store.instance(row.instance_id)!;
      const provider = this.providers.get(inst.provider as InstanceProvider['name'])!;
      const spec: InstanceSpec = InstanceSpecSchema.parse(JSON.parse(inst.spec_json));
      const ref: InstanceRef = { instance_id: row.instance_id, generation: row.generation, operation_id: row.operation_id, spec };
      let status: 'succeeded' | 'failed' | 'unknown';
      let reason: string | null = null;
      let changed: boolean | null = null;
      let observation: Observation | null = null;
      try {
        const outcome = await provider[PROVIDER_METHOD[row.action]](ref);
        status = 'succeeded';
        changed = outcome.changed;
        observation = outcome.observation;
      } catch (e) {
        if (isUnreachable(e)) {
          status = 'unknown';
          reason = (e as Error).message;
        } else {
          status = 'failed';
          reason = (e as Error).message.split('\n')[0]!.slice(0, 500);
          observation = await provider.inspect(row.instance_id, row.generation).catch(() => null);
        }
      }
      if (status === 'succeeded') this.faults('provider_effect_done');
      const now = this.now();
      this.store.tx(() => {
        this.store.updateOperation(
          row.operation_id,
          { status, reason, changed: changed === null ? null : changed ? 1 : 0, finished_at: status === 'unknown' ? null : now },
          now,
        );
        if (observation) this.store.observe(row.instance_id, observation, now);
        this.evidence({
          instance_id: row.instance_id,
          operation_id: row.operation_id,
          generation: row.generation,
          event: status,
          from_state: 'dispatched',
          to_state: status,
          detail: `${row.action}${changed === null ? '' : changed ? ': effect made' : ': already in effect, nothing done'}${reason ? `: ${reason}` : ''}${observation ? ` (runtime ${observation.runtime_state})` : ''}`,
        });
      });
      this.faults('ledger_recorded');
      return { operation_id: row.operation_id, outcome: status, reason, observation: observation ?? this.observation(row.instance_id) };
    } finally {
      this.executing.delete(row.operation_id);
    }
  }

  private recorded(row: OperationRow): EffectResult {
    const outcome = row.status === 'succeeded' || row.status === 'failed' || row.status === 'rejected' ? row.status : 'unknown';
    return { operation_id: row.operation_id, outcome, reason: row.reason, observation: this.observation(row.instance_id) };
  }

  private newRow(
    request: OperationRequest,
    hash: string,
    status: OperationRow['status'],
    reason: string | null,
    now: number,
    finishedAt: number | null,
  ): OperationRow {
    return {
      operation_id: request.operation_id,
      instance_id: request.instance_id,
      generation: request.generation,
      action: request.action,
      request_hash: hash,
      request_json: JSON.stringify(request),
      status,
      reason,
      owner_host: hostname(),
      owner_pid: process.pid,
      changed: null,
      created_at: now,
      updated_at: now,
      finished_at: finishedAt,
    };
  }

  private evidence(e: Omit<Evidence, 'at' | 'source' | 'actor'>): void {
    this.store.addEvidence({ at: this.now(), source: 'management', actor: this.actor, ...e });
  }
}

const PROVIDER_METHOD = { provision: 'create', start: 'start', stop: 'stop', destroy: 'destroy' } as const;

function isTerminal(status: string): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'rejected';
}

function rowObservation(inst: InstanceRow): Observation {
  return { generation: inst.generation, runtime_state: inst.runtime_state, runtime_id: inst.runtime_id };
}

function defaultOwnerAlive(host: string | null, pid: number | null): boolean {
  if (host !== hostname()) return true; // another machine's runner: never presume it dead
  if (pid === null) return false;
  if (pid === process.pid) return false; // this process is not executing it (checked by `executing`)
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
