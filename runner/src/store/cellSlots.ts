import type { Db } from './openStore.js';

/** One cell's place in the machine's queue, as the store keeps it. */
export interface SlotRow {
  id: number;
  pid: number;
  run_id: string;
  memory_mib: number;
  /** Runs only when nothing else does (a crashed test cell's second try). */
  exclusive: boolean;
  state: 'waiting' | 'running';
  /** Order of arrival. */
  ticket: number;
}

/**
 * The machine's queue of cells (table cell_slots), shared by every runner process through the
 * store: each cell waits in a row, and one step at a time (an immediate transaction) a row
 * whose process is gone is dropped and the head may start.
 */
export class CellSlots {
  constructor(private readonly db: Db) {}

  enqueue(row: { pid: number; runId: string; memoryMib: number; exclusive: boolean }): number {
    const r = this.db
      .prepare(
        `INSERT INTO cell_slots (pid, run_id, memory_mib, exclusive, state, ticket, created_at)
         VALUES (?, ?, ?, ?, 'waiting', (SELECT COALESCE(MAX(ticket), 0) + 1 FROM cell_slots), ?)`,
      )
      .run(row.pid, row.runId, row.memoryMib, row.exclusive ? 1 : 0, new Date().toISOString());
    return Number(r.lastInsertRowid);
  }

  /** One step: forget the rows of dead processes, then ask `decide` whether row `id` starts. */
  step<T extends { admit: boolean }>(id: number, alive: (pid: number) => boolean, decide: (rows: SlotRow[]) => T): T {
    return this.db
      .transaction(() => {
        const rows = this.rows();
        const dead = [...new Set(rows.map((r) => r.pid))].filter((pid) => pid !== process.pid && !alive(pid));
        for (const pid of dead) this.db.prepare('DELETE FROM cell_slots WHERE pid = ?').run(pid);
        const live = rows.filter((r) => !dead.includes(r.pid));
        const decision = decide(live);
        if (decision.admit) this.db.prepare(`UPDATE cell_slots SET state = 'running' WHERE id = ?`).run(id);
        return decision;
      })
      .immediate();
  }

  release(id: number): void {
    this.db.prepare('DELETE FROM cell_slots WHERE id = ?').run(id);
  }

  /** This process's rows (a runner that starts drops what an earlier one of the same pid left). */
  forgetOwn(): void {
    this.db.prepare('DELETE FROM cell_slots WHERE pid = ?').run(process.pid);
  }

  rows(): SlotRow[] {
    return (
      this.db.prepare('SELECT id, pid, run_id, memory_mib, exclusive, state, ticket FROM cell_slots ORDER BY ticket').all() as Array<
        Omit<SlotRow, 'exclusive'> & { exclusive: number }
      >
    ).map((r) => ({ ...r, exclusive: r.exclusive === 1 }));
  }
}
