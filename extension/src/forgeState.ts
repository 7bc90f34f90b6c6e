import type { HealthReport } from '../../runner/src/protocol/health.js';
import type { CellSnapshot, RunSnapshot, RunSummary } from '../../runner/src/protocol/rpcFix.js';
import type { RunnerResult } from './runner/runnerConnection.js';
import { repoInFolders } from './workspaceScope.js';

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
  /** The window's workspace folders: runs of other repositories are hidden unless showAll. */
  folders: string[] = [];
  showAll = false;
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

  setScope(folders: string[], showAll = this.showAll): void {
    this.folders = folders;
    this.showAll = showAll;
    this.emit('runs');
    this.emit('cells');
  }

  /** Whether a run's repository is open in this window. */
  inScope(run: Pick<RunSummary, 'repo'>): boolean {
    return repoInFolders(run.repo, this.folders);
  }

  /** The runs the Attempts view lists: this window's, or every repository's when showAll. */
  get visibleRuns(): RunSummary[] {
    return this.showAll ? this.runs : this.runs.filter((r) => this.inScope(r));
  }

  /** Runs of other repositories the view leaves out. */
  get hiddenRuns(): number {
    return this.runs.length - this.visibleRuns.length;
  }

  setHealth(health: HealthReport | null): void {
    this.health = health;
    this.emit('health');
  }

  setInstances(rows: InstanceRow[]): void {
    this.instances = rows;
    this.emit('instances');
  }

  /** The run the Cells view and the review commands act on: the newest one of this window's repositories. */
  get currentRun(): RunSummary | undefined {
    return this.runs.find((r) => this.inScope(r));
  }

  /** The newest run (of this window's repositories) when it can be resumed: what Resume Run from the palette acts on. */
  get resumableRun(): RunSummary | undefined {
    const run = this.currentRun;
    return run && isResumable(run) ? run : undefined;
  }

  /**
   * The newest fixed run of this window's repositories whose winner still waits for review:
   * a palette command never reaches into a repository the window does not have open.
   */
  get reviewableRun(): RunSummary | undefined {
    return this.runs.find((r) => r.status === 'fixed' && r.review === 'pending' && this.inScope(r));
  }

  private emit(what: 'runs' | 'cells' | 'health' | 'instances'): void {
    for (const l of this.listeners) l(what);
  }
}
