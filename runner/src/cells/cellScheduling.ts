/**
 * Pure: who of the cells waiting on this machine runs next. One queue for every run of every
 * runner process on the machine (the store holds it): a run started while another runs is
 * accepted and its cells wait their turn, instead of competing for cores and memory (three
 * overlapping runs once starved vitest into crashes that counted as failing tests).
 */

import type { SlotRow } from '../store/cellSlots.js';

export type { SlotRow } from '../store/cellSlots.js';

export interface CellBudget {
  /** Cells running at once on this machine. */
  cells: number;
  /** Sum of the running cells' memory limits (MiB). */
  memoryMib: number;
}

export type Admission = { admit: true } | { admit: false; position: number; ahead: number };

/**
 * Fair order: the waiting cell of the run with the fewest cells running goes first (so a run
 * started later is not starved by an earlier one with many attempts), then by arrival.
 */
export function waitingOrder(rows: readonly SlotRow[]): SlotRow[] {
  const runningOf = new Map<string, number>();
  for (const r of rows) if (r.state === 'running') runningOf.set(r.run_id, (runningOf.get(r.run_id) ?? 0) + 1);
  return rows
    .filter((r) => r.state === 'waiting')
    .sort((a, b) => (runningOf.get(a.run_id) ?? 0) - (runningOf.get(b.run_id) ?? 0) || a.ticket - b.ticket);
}

/** Pure: may the waiting cell `id` start now, and if not, where it stands. */
export function admission(rows: readonly SlotRow[], id: number, budget: CellBudget): Admission {
  const running = rows.filter((r) => r.state === 'running');
  const order = waitingOrder(rows);
  const index = order.findIndex((r) => r.id === id);
  const me = order[index];
  if (!me) return { admit: true };
  const stand = { admit: false as const, position: index + 1, ahead: index + running.length };
  // Only the head of the queue starts: a cell waiting for the machine to itself is not passed forever.
  if (index > 0) return stand;
  if (running.length === 0) return { admit: true };
  if (me.exclusive || running.some((r) => r.exclusive)) return stand;
  const memory = running.reduce((n, r) => n + r.memory_mib, 0);
  return running.length < budget.cells && memory + me.memory_mib <= budget.memoryMib ? { admit: true } : stand;
}
