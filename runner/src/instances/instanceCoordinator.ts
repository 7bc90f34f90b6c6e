import { InputError, describeZodError } from '../protocol/inputError.js';
import {
  type CommandReply,
  type EffectResult,
  type InstanceCellState,
  type InstanceSpec,
  InstanceSpecSchema,
  type OperationRequest,
  OperationRequestSchema,
} from '../protocol/instanceCell.js';
import type { CellHost } from './cellHost.js';
import { type ReconcilePlan, classifyReconciliation } from './core/classifyReconciliation.js';
import { activeOperation, type CellEffect, owedEffects } from './core/instanceCellCore.js';
import { type FaultInjector, noFaults } from './management/faultPoints.js';
import type { Management } from './management/management.js';
import { requestHash } from './operationRequest.js';

export interface DriveOptions {
  /** Stop waiting after this long (the cell keeps its alarms; reconcile resumes it). */
  timeoutMs: number;
  onState?: (state: InstanceCellState) => void;
  signal?: AbortSignal;
}

export interface DriveResult {
  state: InstanceCellState;
  settled: boolean;
}

/**
 * Drives InstanceCells: submits commands to the cell host, carries the effects each cell
 * owes to management and brings the answers back, fires alarms, and reconciles after a
 * restart. Holds no state of its own: everything it needs is re-read from the cell and the
 * ledger, so a runner killed at any point resumes where it stopped.
 */
export class InstanceCoordinator {
  private readonly faults: FaultInjector;

  constructor(
    readonly cells: CellHost,
    readonly management: Management,
    options: { faults?: FaultInjector } = {},
  ) {
    this.faults = options.faults ?? noFaults;
  }

  /** Validates and submits one command; returns the cell's acknowledgement. */
  async submit(raw: unknown): Promise<CommandReply> {
    const request = parseRequest(raw);
    const spec = request.action === 'provision' ? parseSpec(request.payload.spec) : null;
    if (spec) request.payload = { ...request.payload, spec };
    await this.adoptFromInventory(request.instance_id);
    const hash = requestHash(request);
    const out = await this.cells.step(request.instance_id, { kind: 'command', request, hash, spec });
    const reply = out.reply!;
    if (reply.status === 'rejected' && reply.reason !== 'idempotency_mismatch') {
      // One record per operation id on both sides: a later delivery of this id straight to
      // the ledger must answer the same rejection, not act.
      this.management.recordRejection(request, hash, reply.reason ?? 'rejected', reply.detail);
    }
    this.faults('cell_accepted');
    return reply;
  }

  /** Carries effects and fires alarms until the cell settles or the timeout passes. */
  async drive(instanceId: string, options: DriveOptions): Promise<DriveResult> {
    const deadline = Date.now() + options.timeoutMs;
    let last = '';
    for (;;) {
      await this.cells.fireDueAlarms(instanceId, Date.now());
      let state = await this.cells.read(instanceId);
      if (!state)
        throw new InputError(
          `no instance ${instanceId}; provision it first (forge-runner instance provision --instance ${instanceId} ...)`,
        );
      const effects = owedEffects(state);
      for (const effect of effects) state = await this.carry(instanceId, effect);
      const key = `${state.state}/${state.operations.map((o) => o.status).join(',')}`;
      if (key !== last) {
        options.onState?.(state);
        last = key;
      }
      if (effects.length > 0) continue;
      if (isSettled(state)) return { state, settled: true };
      const next = await this.cells.nextAlarmAt(instanceId);
      const now = Date.now();
      if (now >= deadline || options.signal?.aborted) return { state, settled: false };
      const wait = Math.max(0, Math.min((next ?? now + 250) - now, deadline - now, 1000));
      await sleep(wait);
    }
  }

  /** Reads both sides, plans generation-safe idempotent steps, applies them, and drives. */
  async reconcile(instanceId: string, options: DriveOptions): Promise<DriveResult & { plan: ReconcilePlan }> {
    const cell = await this.cells.read(instanceId);
    await this.management.refresh(instanceId).catch(() => null);
    const inv = this.management.store.instance(instanceId);
    const ledgerOpen = this.management.store.openOperations(instanceId);
    const plan = classifyReconciliation(
      cell,
      inv ? { generation: inv.generation, observation: this.management.observation(instanceId)! } : null,
      ledgerOpen,
    );
    if (!cell && !inv)
      throw new InputError(`no instance ${instanceId} in the cell store or the inventory; check the id with forge-runner instance list`);
    for (const action of plan.actions) {
      if (action.kind === 'lookup') {
        const inCell = cell?.operations.some((o) => o.operation_id === action.operation_id);
        if (inCell) await this.cells.step(instanceId, { kind: 'alarm', name: `op:${action.operation_id}` });
        else await this.management.lookup(action.operation_id);
      } else if (action.kind === 'refresh_observation') {
        const obs = this.management.observation(instanceId);
        if (obs) await this.cells.step(instanceId, { kind: 'observe', observation: obs });
      }
      // resubmit: the cell already owes the apply; drive carries it under the same id.
    }
    const result = cell || inv ? await this.drive(instanceId, options) : { state: cell!, settled: true };
    return { ...result, plan };
  }

  /**
   * An instance management knows but this cell host does not (its cell lived in Celld,
   * which is now disabled, or the cell store was lost): bind a cell to management's
   * observed generation so the instance stays operable. Observed truth, never invented.
   */
  private async adoptFromInventory(instanceId: string): Promise<void> {
    const inv = this.management.store.instance(instanceId);
    if (!inv || (await this.cells.read(instanceId))) return;
    const observation = (await this.management.refresh(instanceId).catch(() => null)) ?? this.management.observation(instanceId);
    if (observation) await this.cells.step(instanceId, { kind: 'observe', observation });
  }

  private async carry(instanceId: string, effect: CellEffect): Promise<InstanceCellState> {
    if (effect.kind === 'probe') {
      this.faults('enrolling');
      const r = await this.management.probe(instanceId, effect.generation);
      return (await this.cells.step(instanceId, { kind: 'probe_result', generation: effect.generation, ready: r.ready, detail: r.detail }))
        .state;
    }
    let result: EffectResult;
    try {
      result =
        effect.kind === 'apply'
          ? await this.management.apply(effect.request, requestHash(effect.request))
          : await this.management.lookup(effect.operation_id);
    } catch (e) {
      // No answer (lost response, crash of the effect service): the outcome must be discovered.
      result = { operation_id: effect.operation_id, outcome: 'unknown', reason: (e as Error).message, observation: null };
    }
    return (await this.cells.step(instanceId, { kind: 'effect_result', result })).state;
  }
}

export function isSettled(state: InstanceCellState): boolean {
  if (activeOperation(state) || state.operations.some((o) => o.status === 'pending')) return false;
  // Nothing owed and nothing in progress ('requested' with no open operation: every command was rejected).
  return state.state !== 'provisioning' && state.state !== 'enrolling' && state.state !== 'stopping' && state.state !== 'unknown';
}

function parseRequest(raw: unknown): OperationRequest {
  const r = OperationRequestSchema.safeParse(raw);
  if (!r.success) throw new InputError(describeZodError('operation request', r.error));
  return r.data;
}

function parseSpec(raw: unknown): InstanceSpec {
  if (raw === undefined) throw new InputError('provision needs an instance spec: pass --provider (and --image for docker) or --spec FILE');
  const r = InstanceSpecSchema.safeParse(raw);
  if (!r.success) throw new InputError(describeZodError('instance spec', r.error));
  if (r.data.provider === 'docker' && !r.data.image)
    throw new InputError('a docker instance needs an image: pass --image or set "image" in the spec');
  if (r.data.provider === 'qemu' && r.data.allow_net)
    throw new InputError('qemu instances have no network device in this build; drop allow_net or use a docker instance');
  return r.data;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
