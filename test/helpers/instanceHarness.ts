import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Db, openStore } from '../../runner/src/store/openStore.js';
import { EmbeddedCellHost } from '../../runner/src/instances/embeddedCellHost.js';
import { InstanceCoordinator } from '../../runner/src/instances/instanceCoordinator.js';
import type { FaultInjector } from '../../runner/src/instances/management/faultPoints.js';
import { LedgerStore } from '../../runner/src/instances/management/ledgerStore.js';
import { Management } from '../../runner/src/instances/management/management.js';
import { defaultInstanceProviders } from '../../runner/src/instances/providers/instanceProviderRegistry.js';
import { InstrumentedProviders } from '../../runner/src/instances/qualify/instrumentedProviders.js';
import type { CoreSettings } from '../../runner/src/instances/core/instanceCellCore.js';

/** Real management over an on-disk store, an embedded cell host, and counted real providers. */
export class InstanceHarness {
  readonly stateDir = mkdtempSync(join(tmpdir(), 'forge-inst-test-'));
  readonly db: Db = openStore(join(this.stateDir, 'forge.db'));
  readonly providers = new InstrumentedProviders(defaultInstanceProviders({ stateDir: this.stateDir }));
  readonly store = new LedgerStore(this.db);
  management: Management;
  coordinator: InstanceCoordinator;

  constructor(options: { faults?: FaultInjector; settings?: Partial<CoreSettings> } = {}) {
    this.management = new Management(this.store, this.providers, { faults: options.faults });
    const settings = { retentionMs: 86_400_000, retainFinished: 1000, lookupBaseMs: 20, lookupMaxMs: 200, ...options.settings };
    this.coordinator = new InstanceCoordinator(new EmbeddedCellHost(this.db, { settings }), this.management);
  }

  /** Destroys every runtime the test made (all generations) and removes the state. */
  async cleanup(): Promise<void> {
    const real = defaultInstanceProviders({ stateDir: this.stateDir });
    for (const inst of this.store.instances()) {
      const p = real.get(inst.provider as 'host' | 'docker');
      for (let g = 1; g <= inst.generation; g++) {
        await p
          ?.destroy({
            instance_id: inst.instance_id,
            generation: g,
            operation_id: 'test-cleanup',
            spec: {
              provider: inst.provider as 'host',
              image: JSON.parse(inst.spec_json).image,
              enroll_timeout_s: 1,
              probe_interval_ms: 100,
              env: {},
              allow_net: false,
            },
          })
          .catch(() => undefined);
      }
    }
    this.db.close();
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}
