import type { HealthReport } from '../../runner/src/protocol/health.js';
import type { CellSnapshot, RunSnapshot, RunSummary } from '../../runner/src/protocol/rpcFix.js';
import type { RunnerResult } from './runner/runnerConnection.js';

export type InstanceRow = RunnerResult<'instances/list'>[number];

/** A run that never finished (cancelled, or its runner died) and can be continued with fix/resume. */
export function isResumable(r: Pick<RunSummary, 'status'>): boolean {
  return r.status === 'cancelled' || r.status === 'interrupted';
}

/**
 * What the views show, as last pushed or read from the runner. Filled from notifications
 * (runs/changed, cells/changed, instances/changed) and, after a (re)start, from the store
 * via runs/list + runs/show, so a restarted runner shows the same. No `vscode` import.
 */
export class ForgeState {
  runs: RunSummary[] = [];
  readonly snapshots = new Map<string, RunSnapshot>();
  running: CellSnapshot[] = [];
  health: HealthReport | null = null;
  instances: InstanceRow[] = [];
  private readonly listeners = new Set<(what: 'runs' | 'cells' | 'health' | 'instances') => void>();

  onChange(listener: (what: 'runs' | 'cells' | 'health' | 'instances') => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  setRuns(runs: RunSummary[]): void {
    this.runs = runs;
    this.emit('runs');
  }

  putSnapshot(snap: RunSnapshot): void {
    this.snapshots.set(snap.run.run_id, snap);
    const i = this.runs.findIndex((r) => r.run_id === snap.run.run_id);
    if (i >= 0) this.runs[i] = snap.run;
    else this.runs = [snap.run, ...this.runs];
    this.emit('runs');
    this.emit('cells');
  }

  setRunning(cells: CellSnapshot[]): void {
    this.running = cells;
    this.emit('cells');
  }

  setHealth(health: HealthReport | null): void {
    this.health = health;
    this.emit('health');
  }

  setInstances(rows: InstanceRow[]): void {
    this.instances = rows;
    this.emit('instances');
  }

  /** The run the Cells view and the review commands act on: the newest one. */
  get currentRun(): RunSummary | undefined {
    return this.runs[0];
  }

  /** The newest run when it can be resumed: what Resume Run from the palette acts on. */
  get resumableRun(): RunSummary | undefined {
    const run = this.currentRun;
    return run && isResumable(run) ? run : undefined;
  }

  /** The newest fixed run whose winner still waits for review. */
  get reviewableRun(): RunSummary | undefined {
    return this.runs.find((r) => r.status === 'fixed' && r.review === 'pending');
  }

  private emit(what: 'runs' | 'cells' | 'health' | 'instances'): void {
    for (const l of this.listeners) l(what);
  }
}
