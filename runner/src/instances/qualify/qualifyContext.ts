// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Db, openStore } from '../../store/openStore.js';
import { EmbeddedCellHost } from '../embeddedCellHost.js';
import { InstanceCoordinator, isSettled } from '../instanceCoordinator.js';
import { type FaultPoint, LostResponseError } from '../management/faultPoints.js';
import { LedgerStore } from '../management/ledgerStore.js';
import { Management } from '../management/management.js';
import { HostInstanceProvider } from '../providers/hostInstanceProvider.js';
import { defaultInstanceProviders } from '../providers/instanceProviderRegistry.js';
import { InstrumentedProviders } from './instrumentedProviders.js';
import type { InstanceCellState, InstanceSpec } from '../../protocol/instanceCell.js';

export interface QualifyOptions {
  full: boolean;
  /** dist/runner.js: restart trials run the real CLI in child processes. */
  runnerPath: string;
  provider: 'host' | 'docker';
  image?: string;
  onProgress?: (line: string) => void;
}

export interface MeasureResult {
  measure: string;
  trials: number;
  result: string;
  threshold: string;
  pass: boolean;
  details?: Record<string, unknown>;
}

/** A private state directory with management, an embedded cell host and counted providers. */
export class QualifyContext {
  readonly stateDir: string;
  readonly db: Db;
  readonly providers: InstrumentedProviders;
  readonly management: Management;
  readonly coordinator: InstanceCoordinator;
  readonly host: HostInstanceProvider;
  /** Arms one lost response after management has recorded an outcome. */
  dropNextManagementAnswer = false;

  constructor(readonly options: QualifyOptions) {
    this.stateDir = mkdtempSync(join(tmpdir(), 'forge-qualify-'));
    this.db = openStore(join(this.stateDir, 'forge.db'));
    this.providers = new InstrumentedProviders(defaultInstanceProviders({ stateDir: this.stateDir }));
    this.host = new HostInstanceProvider({ stateDir: this.stateDir });
    const faults = (point: FaultPoint) => {
      if (point === 'drop_response' && this.dropNextManagementAnswer) {
        this.dropNextManagementAnswer = false;
        throw new LostResponseError('qualification: management answer lost after it was recorded');
      }
    };
    this.management = new Management(new LedgerStore(this.db), this.providers, { faults });
    this.coordinator = new InstanceCoordinator(
      new EmbeddedCellHost(this.db, {
        settings: { retentionMs: 30 * 86_400_000, retainFinished: 100_000, lookupBaseMs: 50, lookupMaxMs: 2000 },
      }),
      this.management,
    );
  }

  spec(): InstanceSpec {
    const base = { enroll_timeout_s: 60, probe_interval_ms: 100, env: {}, allow_net: false };
    return this.options.provider === 'docker'
      ? { ...base, provider: 'docker', image: this.options.image ?? 'forge-test/busybox:1' }
      : { ...base, provider: 'host' };
  }

  async lifecycle(
    instanceId: string,
    opId: string,
    generation: number,
    action: 'provision' | 'start' | 'stop' | 'destroy',
  ): Promise<InstanceCellState> {
    await this.coordinator.submit({
      operation_id: opId,
      instance_id: instanceId,
      generation,
      action,
      payload: action === 'provision' ? { spec: this.spec() } : {},
    });
    const r = await this.coordinator.drive(instanceId, { timeoutMs: 60_000 });
    if (!isSettled(r.state)) throw new Error(`${instanceId} did not settle after ${action} (${r.state.state})`);
    return r.state;
  }

  /** Ground truth of effects for host instances: lines the instance processes wrote themselves. */
  journal(instanceId: string, generation: number): string[] {
    return this.host.journal(instanceId, generation);
  }

  async cleanup(): Promise<void> {
    for (const inst of this.management.store.instances()) {
      // Teardown of the qualification sandbox itself, not a measured operation.
      const provider = defaultInstanceProviders({ stateDir: this.stateDir }).get(inst.provider as 'host' | 'docker');
      for (let g = 1; g <= inst.generation; g++)
        await provider
          ?.destroy({ instance_id: inst.instance_id, generation: g, operation_id: 'qualify-cleanup', spec: this.spec() })
          .catch(() => undefined);
    }
    this.db.close();
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
