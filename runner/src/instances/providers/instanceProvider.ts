import type { CapabilityDescriptor, InstanceSpec, Observation } from '../../protocol/instanceCell.js';

/** One incarnation of a logical instance, and the operation acting on it. */
export interface InstanceRef {
  instance_id: string;
  generation: number;
  operation_id: string;
  spec: InstanceSpec;
}

/**
 * `changed` says whether this call had an externally visible effect. Every method is
 * idempotent for its incarnation: a create that finds its runtime already made, a stop
 * that finds it stopped, report changed=false and cause nothing.
 */
export interface EffectOutcome {
  changed: boolean;
  observation: Observation;
}

export interface ProbeOutcome {
  ready: boolean;
  detail: string;
}

export interface InstanceProvider {
  readonly name: 'host' | 'docker' | 'qemu';
  capabilities(): CapabilityDescriptor;
  available(): Promise<{ ok: boolean; reason: string }>;
  /** Create and start the runtime of this incarnation. */
  create(ref: InstanceRef): Promise<EffectOutcome>;
  start(ref: InstanceRef): Promise<EffectOutcome>;
  stop(ref: InstanceRef): Promise<EffectOutcome>;
  destroy(ref: InstanceRef): Promise<EffectOutcome>;
  /** Read-only: what the runtime of this incarnation is now. */
  inspect(instanceId: string, generation: number): Promise<Observation>;
  /** Read-only readiness: the spec's probe run inside the instance. */
  probe(ref: InstanceRef): Promise<ProbeOutcome>;
}

/**
 * The provider could not be reached or did not answer in time: whether the effect happened
 * is unknown, so the ledger records `unknown` and resolves it by inspection, never by a new
 * effect identity.
 */
export class ProviderUnreachableError extends Error {
  override readonly name = 'ProviderUnreachableError';
}

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOENT', 'EAI_AGAIN']);

export function isUnreachable(error: unknown): boolean {
  if (error instanceof ProviderUnreachableError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNREACHABLE_CODES.has(code) && /connect|socket|read|write/i.test(String((error as Error).message));
}
