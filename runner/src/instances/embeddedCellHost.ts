import { hostname } from 'node:os';
import { type Evidence, type InstanceCellState, InstanceCellStateSchema } from '../protocol/instanceCell.js';
import type { Db } from '../store/openStore.js';
import type { CellHost, CellStepResult } from './cellHost.js';
import { type CellInput, type CoreSettings, DEFAULT_CORE_SETTINGS, emptyCell, step } from './core/instanceCellCore.js';
import { LedgerStore } from './management/ledgerStore.js';

/** The InstanceCell embedded in the runner: state, alarms and evidence in SQLite. */
export class EmbeddedCellHost implements CellHost {
  readonly kind = 'embedded' as const;
  private readonly ledger: LedgerStore;
  private readonly actor: string;

  constructor(
    private readonly db: Db,
    private readonly options: { now?: () => number; settings?: CoreSettings; actor?: string } = {},
  ) {
    this.ledger = new LedgerStore(db);
    this.actor = options.actor ?? `cell@${hostname()}:${process.pid}`;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  async read(instanceId: string): Promise<InstanceCellState | null> {
    return this.readSync(instanceId);
  }

  private readSync(instanceId: string): InstanceCellState | null {
    const row = this.db.prepare('SELECT state_json FROM cell_state WHERE instance_id = ?').get(instanceId) as
      { state_json: string } | undefined;
    return row ? InstanceCellStateSchema.parse(JSON.parse(row.state_json)) : null;
  }

  async step(instanceId: string, input: CellInput): Promise<CellStepResult> {
    return this.stepSync(instanceId, input);
  }

  private stepSync(instanceId: string, input: CellInput): CellStepResult {
    return this.ledger.tx(() => {
      const now = this.now();
      const prev = this.readSync(instanceId) ?? emptyCell(instanceId, now);
      const out = step(prev, input, { now, actor: this.actor }, this.options.settings ?? DEFAULT_CORE_SETTINGS);
      this.db
        .prepare(
          'INSERT INTO cell_state (instance_id, state_json, updated_at) VALUES (?, ?, ?) ON CONFLICT(instance_id) DO UPDATE SET state_json = excluded.state_json, updated_at = excluded.updated_at',
        )
        .run(instanceId, JSON.stringify(out.state), now);
      for (const a of out.alarms) {
        if (a.due_at === null) this.db.prepare('DELETE FROM cell_alarms WHERE instance_id = ? AND name = ?').run(instanceId, a.name);
        else
          this.db
            .prepare(
              'INSERT INTO cell_alarms (instance_id, name, due_at, attempt) VALUES (?, ?, ?, ?) ON CONFLICT(instance_id, name) DO UPDATE SET due_at = excluded.due_at, attempt = excluded.attempt',
            )
            .run(instanceId, a.name, a.due_at, a.attempt);
      }
      for (const e of out.evidence) this.ledger.addEvidence(e);
      return { state: out.state, reply: out.reply };
    });
  }

  async fireDueAlarms(instanceId: string, now: number): Promise<number> {
    const due = this.db
      .prepare('SELECT name FROM cell_alarms WHERE instance_id = ? AND due_at <= ? ORDER BY due_at')
      .pluck()
      .all(instanceId, now) as string[];
    for (const name of due) {
      // Consume and step in one transaction: an alarm fires exactly once, even across a crash
      // or two runners racing for it.
      this.ledger.tx(() => {
        const fired = this.db
          .prepare('DELETE FROM cell_alarms WHERE instance_id = ? AND name = ? AND due_at <= ?')
          .run(instanceId, name, now).changes;
        if (fired) this.stepSync(instanceId, { kind: 'alarm', name });
      });
    }
    return due.length;
  }

  async nextAlarmAt(instanceId: string): Promise<number | null> {
    return (this.db.prepare('SELECT MIN(due_at) FROM cell_alarms WHERE instance_id = ?').pluck().get(instanceId) as number | null) ?? null;
  }

  async evidence(instanceId: string, limit = 1000): Promise<Evidence[]> {
    return this.ledger.evidence({ instanceId, limit }).filter((e) => e.source === 'cell');
  }

  async list(): Promise<string[]> {
    return this.db.prepare('SELECT instance_id FROM cell_state ORDER BY instance_id').pluck().all() as string[];
  }
}
