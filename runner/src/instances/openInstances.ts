import { join } from 'node:path';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { openStore } from '../store/openStore.js';
import type { CellHost } from './cellHost.js';
import { celldSettingsFromEnv } from './celld/celldSettings.js';
import { CelldCellHost } from './celld/celldCellHost.js';
import { EmbeddedCellHost } from './embeddedCellHost.js';
import { InstanceCoordinator } from './instanceCoordinator.js';
import { faultsFromEnv } from './management/faultPoints.js';
import { LedgerStore } from './management/ledgerStore.js';
import { Management } from './management/management.js';
import { defaultInstanceProviders } from './providers/instanceProviderRegistry.js';

/**
 * The runner's instance management as configured: management always embedded over the
 * runner store; the InstanceCell embedded too unless Celld is enabled (FORGE_CELLD_ENABLED),
 * in which case only the compatibility adapter talks to it.
 */
export function openInstances(env: NodeJS.ProcessEnv = process.env): InstanceCoordinator {
  const stateDir = runnerStateDir(env);
  const db = openStore(join(stateDir, 'forge.db'));
  const faults = faultsFromEnv(env);
  const management = new Management(new LedgerStore(db), defaultInstanceProviders({ stateDir }), { faults });
  const celld = celldSettingsFromEnv(env);
  const cells: CellHost = celld ? new CelldCellHost(celld) : new EmbeddedCellHost(db);
  return new InstanceCoordinator(cells, management, { faults });
}
