import type { OperationRequest } from './operationRequest.js';

export type OperationStatus = 'pending' | 'dispatched' | 'unknown' | 'succeeded' | 'failed' | 'rejected';
export const TERMINAL: ReadonlySet<OperationStatus> = new Set(['succeeded', 'failed', 'rejected']);

export interface OperationRecord {
  operation_id: string;
  request_hash: string;
  status: OperationStatus;
}

export type RejectReason = 'idempotency_mismatch' | 'stale_generation' | 'future_generation';

export type Admission =
  /** New operation: record it as pending, then (at most once) effect it. */
  | { kind: 'admit' }
  /** Same id, same request, already ended: answer with the recorded outcome; no new effect. */
  | { kind: 'replay'; record: OperationRecord }
  /** Same id, same request, still in flight or to be discovered: no new effect. */
  | { kind: 'in_flight'; record: OperationRecord }
  /** Terminally refused before any provider is called. */
  | { kind: 'reject'; reason: RejectReason; detail: string };

/**
 * Pure: what the ledger does with a command. `observedGeneration` is the instance's current
 * incarnation as management has created and observed it (null: none yet, so only a
 * provision of generation 1 can start one).
 */
export function admitOperation(
  request: OperationRequest,
  hash: string,
  existing: OperationRecord | null,
  observedGeneration: number | null,
): Admission {
  if (existing) {
    if (existing.request_hash !== hash) {
      return {
        kind: 'reject',
        reason: 'idempotency_mismatch',
        detail: `operation ${request.operation_id} was already used for a different request`,
      };
    }
    return TERMINAL.has(existing.status) ? { kind: 'replay', record: existing } : { kind: 'in_flight', record: existing };
  }
  const current = observedGeneration ?? 0;
  if (request.generation < current) {
    return {
      kind: 'reject',
      reason: 'stale_generation',
      detail: `generation ${request.generation} is older than the observed generation ${current}`,
    };
  }
  // A new incarnation exists only once management created and observed it; provision is how it is created.
  const creates = request.action === 'provision' && request.generation === current + 1;
  if (request.generation > current && !creates) {
    return {
      kind: 'reject',
      reason: 'future_generation',
      detail: `generation ${request.generation} has not been created and observed (current ${current})`,
    };
  }
  return { kind: 'admit' };
}
