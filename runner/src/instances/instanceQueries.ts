import type { Evidence } from '../protocol/instanceCell.js';
import { InputError } from '../protocol/inputError.js';
import { CelldCellHost } from './celld/celldCellHost.js';
import type { InstanceCoordinator } from './instanceCoordinator.js';

/** Read-only views shared by the CLI and the JSON-RPC server. */
export async function listInstances(c: InstanceCoordinator) {
  const ids = new Set([...c.management.store.instances().map((i) => i.instance_id), ...(await c.cells.list())]);
  const rows = [];
  for (const id of [...ids].sort()) {
    const inv = c.management.store.instance(id);
    const cell = await c.cells.read(id);
    rows.push({
      instance_id: id,
      provider: inv?.provider ?? cell?.spec?.provider ?? null,
      generation: inv?.generation ?? cell?.generation ?? 0,
      state: cell?.state ?? null,
      desired: cell?.desired ?? null,
      runtime_state: inv?.runtime_state ?? null,
    });
  }
  return rows;
}

/** The cell, management's refreshed observation and inventory, open ledger operations. */
export async function instanceStatus(c: InstanceCoordinator, id: string) {
  const cell = await c.cells.read(id);
  const observation = (await c.management.refresh(id).catch(() => null)) ?? c.management.observation(id);
  const inv = c.management.store.instance(id);
  if (!cell && !inv) throw new InputError(`no instance ${id}; see forge-runner instance list`);
  return {
    instance_id: id,
    cell,
    inventory: inv
      ? {
          provider: inv.provider,
          generation: inv.generation,
          runtime_state: inv.runtime_state,
          runtime_id: inv.runtime_id,
          spec: JSON.parse(inv.spec_json) as unknown,
          updated_at: inv.updated_at,
        }
      : null,
    observation,
    open_operations: c.management.store
      .openOperations(id)
      .map((o) => ({ operation_id: o.operation_id, action: o.action, generation: o.generation, status: o.status })),
    coordinator: c.cells.kind,
    celld: c.cells instanceof CelldCellHost ? c.cells.versions : null,
  };
}

export type InstanceStatus = Awaited<ReturnType<typeof instanceStatus>>;

/** Both evidence sources (cell and management) merged in time order. */
export async function instanceHistory(c: InstanceCoordinator, id: string, limit: number): Promise<Evidence[]> {
  // The embedded cell writes its evidence into the same table as management.
  const cellEv = c.cells.kind === 'embedded' ? [] : await c.cells.evidence(id, limit);
  const local = c.management.store.evidence({ instanceId: id, limit }).map(({ seq: _seq, ...e }) => e);
  return [...local, ...cellEv].sort((a, b) => a.at - b.at).slice(-limit);
}
