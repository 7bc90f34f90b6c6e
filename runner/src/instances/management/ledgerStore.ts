import type { Db } from '../../store/openStore.js';
import type { Evidence, LifecycleAction, Observation, OperationStatus } from '../../protocol/instanceCell.js';

export interface OperationRow {
  operation_id: string;
  instance_id: string;
  generation: number;
  action: LifecycleAction;
  request_hash: string;
  request_json: string;
  status: OperationStatus;
  reason: string | null;
  owner_host: string | null;
  owner_pid: number | null;
  /** 1 when the provider reported an externally visible effect for this operation. */
  changed: number | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export interface InstanceRow {
  instance_id: string;
  provider: string;
  generation: number;
  runtime_state: Observation['runtime_state'];
  runtime_id: string | null;
  spec_json: string;
  created_at: number;
  updated_at: number;
}

/** Management's SQLite repository: inventory, operation ledger and evidence. */
export class LedgerStore {
  constructor(readonly db: Db) {}

  /** BEGIN IMMEDIATE: the state change and its evidence commit together or not at all. */
  tx<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  operation(operationId: string): OperationRow | null {
    return (this.db.prepare('SELECT * FROM operations WHERE operation_id = ?').get(operationId) as OperationRow | undefined) ?? null;
  }

  insertOperation(row: OperationRow): void {
    this.db
      .prepare(
        `INSERT INTO operations (operation_id, instance_id, generation, action, request_hash, request_json, status, reason, owner_host, owner_pid, changed, created_at, updated_at, finished_at)
         VALUES (@operation_id, @instance_id, @generation, @action, @request_hash, @request_json, @status, @reason, @owner_host, @owner_pid, @changed, @created_at, @updated_at, @finished_at)`,
      )
      .run(row);
  }

  updateOperation(
    operationId: string,
    fields: Partial<Pick<OperationRow, 'status' | 'reason' | 'owner_host' | 'owner_pid' | 'changed' | 'finished_at'>>,
    now: number,
  ): void {
    const sets = Object.keys(fields).map((k) => `${k} = @${k}`);
    this.db
      .prepare(`UPDATE operations SET ${[...sets, 'updated_at = @now'].join(', ')} WHERE operation_id = @operation_id`)
      .run({ ...fields, now, operation_id: operationId });
  }

  operationsFor(instanceId: string): OperationRow[] {
    return this.db.prepare('SELECT * FROM operations WHERE instance_id = ? ORDER BY created_at, rowid').all(instanceId) as OperationRow[];
  }

  openOperations(instanceId?: string): OperationRow[] {
    const where = "status IN ('pending', 'dispatched', 'unknown')";
    return (
      instanceId
        ? this.db.prepare(`SELECT * FROM operations WHERE ${where} AND instance_id = ? ORDER BY created_at`).all(instanceId)
        : this.db.prepare(`SELECT * FROM operations WHERE ${where} ORDER BY created_at`).all()
    ) as OperationRow[];
  }

  instance(instanceId: string): InstanceRow | null {
    return (this.db.prepare('SELECT * FROM instances WHERE instance_id = ?').get(instanceId) as InstanceRow | undefined) ?? null;
  }

  instances(): InstanceRow[] {
    return this.db.prepare('SELECT * FROM instances ORDER BY instance_id').all() as InstanceRow[];
  }

  upsertInstance(row: InstanceRow): void {
    this.db
      .prepare(
        `INSERT INTO instances (instance_id, provider, generation, runtime_state, runtime_id, spec_json, created_at, updated_at)
         VALUES (@instance_id, @provider, @generation, @runtime_state, @runtime_id, @spec_json, @created_at, @updated_at)
         ON CONFLICT(instance_id) DO UPDATE SET provider = excluded.provider, generation = excluded.generation,
           runtime_state = excluded.runtime_state, runtime_id = excluded.runtime_id, spec_json = excluded.spec_json, updated_at = excluded.updated_at`,
      )
      .run(row);
  }

  observe(instanceId: string, obs: Observation, now: number): void {
    this.db
      .prepare('UPDATE instances SET runtime_state = ?, runtime_id = ?, updated_at = ? WHERE instance_id = ? AND generation = ?')
      .run(obs.runtime_state, obs.runtime_id, now, instanceId, obs.generation);
  }

  addEvidence(e: Evidence): void {
    this.db
      .prepare(
        `INSERT INTO evidence (at, source, actor, instance_id, operation_id, generation, event, from_state, to_state, detail)
         VALUES (@at, @source, @actor, @instance_id, @operation_id, @generation, @event, @from_state, @to_state, @detail)`,
      )
      .run(e);
  }

  evidence(filter: { instanceId?: string; operationId?: string; limit?: number }): Array<Evidence & { seq: number }> {
    const limit = filter.limit ?? 1000;
    if (filter.operationId)
      return this.db.prepare('SELECT * FROM evidence WHERE operation_id = ? ORDER BY seq LIMIT ?').all(filter.operationId, limit) as Array<
        Evidence & { seq: number }
      >;
    return this.db
      .prepare('SELECT * FROM (SELECT * FROM evidence WHERE instance_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq')
      .all(filter.instanceId ?? '', limit) as Array<Evidence & { seq: number }>;
  }

  /** Retention: finished operations (and their evidence) older than the cutoff. */
  pruneFinished(cutoff: number): number {
    return this.tx(() => {
      const ids = this.db
        .prepare("SELECT operation_id FROM operations WHERE status IN ('succeeded', 'failed', 'rejected') AND finished_at < ?")
        .pluck()
        .all(cutoff) as string[];
      const delEv = this.db.prepare('DELETE FROM evidence WHERE operation_id = ?');
      const delOp = this.db.prepare('DELETE FROM operations WHERE operation_id = ?');
      for (const id of ids) {
        delEv.run(id);
        delOp.run(id);
      }
      return ids.length;
    });
  }
}
