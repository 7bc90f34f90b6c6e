import type { InstanceCellState, Observation, OperationStatus } from '../../protocol/instanceCell.js';

export type ReconcileClass = 'converged' | 'pending' | 'unknown' | 'stale' | 'conflict';

export interface LedgerOperationView {
  operation_id: string;
  generation: number;
  action: string;
  status: OperationStatus;
}

export type PlannedAction =
  | { kind: 'resubmit'; operation_id: string; why: string }
  | { kind: 'lookup'; operation_id: string; why: string }
  | { kind: 'refresh_observation'; why: string }
  | { kind: 'report'; why: string };

export interface ReconcilePlan {
  classes: ReconcileClass[];
  actions: PlannedAction[];
}

/**
 * Pure: compares the cell (desired state, generation, outstanding operations) with
 * management (observed runtime, generation, ledger) and plans only generation-safe,
 * idempotent steps: resubmitting or looking up an existing operation id, or refreshing the
 * cell's observation. It never plans a new effect identity: a divergence that needs one
 * (e.g. desired ready, runtime exited) is reported for the operator.
 */
export function classifyReconciliation(
  cell: InstanceCellState | null,
  inventory: { generation: number; observation: Observation } | null,
  ledgerOpen: readonly LedgerOperationView[],
): ReconcilePlan {
  const classes = new Set<ReconcileClass>();
  const actions: PlannedAction[] = [];
  const cellOps = new Set(cell?.operations.map((o) => o.operation_id) ?? []);

  for (const op of cell?.operations ?? []) {
    if (op.status === 'dispatched') {
      classes.add('pending');
      actions.push({
        kind: 'resubmit',
        operation_id: op.operation_id,
        why: `${op.action} generation ${op.generation} was accepted but its result never reached the cell; the ledger answers a resubmission without a new effect`,
      });
    } else if (op.status === 'unknown') {
      classes.add('unknown');
      actions.push({
        kind: 'lookup',
        operation_id: op.operation_id,
        why: `${op.action} outcome unknown: query the operation and the inventory`,
      });
    } else if (op.status === 'pending') {
      classes.add('pending');
    }
  }
  for (const op of ledgerOpen) {
    if (cellOps.has(op.operation_id)) continue;
    classes.add('unknown');
    actions.push({
      kind: 'lookup',
      operation_id: op.operation_id,
      why: `ledger holds ${op.action} ${op.status} that the cell does not track: resolve it under its own id`,
    });
  }

  if (inventory) {
    const cellGen = cell?.generation ?? 0;
    if (
      cellGen < inventory.generation &&
      !cell?.operations.some((o) => o.generation === inventory.generation && o.action === 'provision' && o.status !== 'succeeded')
    ) {
      classes.add('stale');
      actions.push({
        kind: 'refresh_observation',
        why: `cell binding is generation ${cellGen}, management observed ${inventory.generation}`,
      });
    } else if (cell && cellGen > inventory.generation) {
      classes.add('conflict');
      actions.push({
        kind: 'report',
        why: `cell claims generation ${cellGen}, newer than management's ${inventory.generation}; management generation is never lowered`,
      });
    }
    if (cell && !classes.has('pending') && !classes.has('unknown')) {
      const mismatch = divergence(cell, inventory.observation);
      if (mismatch) {
        classes.add('conflict');
        actions.push({ kind: 'refresh_observation', why: mismatch });
        if (cell.desired === 'ready' && inventory.observation.runtime_state !== 'running') {
          actions.push({
            kind: 'report',
            why: `desired ready but runtime ${inventory.observation.runtime_state}: issue start (or destroy) with a new operation id`,
          });
        }
      }
    }
  } else if (cell && cell.generation > 0) {
    classes.add('conflict');
    actions.push({ kind: 'report', why: `management has no inventory for generation ${cell.generation}` });
  }

  if (classes.size === 0) classes.add('converged');
  return { classes: [...classes], actions };
}

function divergence(cell: InstanceCellState, obs: Observation): string | null {
  const rt = obs.runtime_state;
  const ok =
    (cell.state === 'ready' && rt === 'running') ||
    (cell.state === 'enrolling' && rt === 'running') ||
    (cell.state === 'stopped' && (rt === 'exited' || rt === 'created')) ||
    (cell.state === 'destroyed' && (rt === 'removed' || rt === 'absent')) ||
    (cell.state === 'failed' && rt !== 'running') ||
    (cell.state === 'failed' && cell.desired === 'ready');
  return ok ? null : `cell says ${cell.state}, runtime is ${rt}`;
}
