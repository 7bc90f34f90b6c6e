import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CellProvider, CellRunOptions } from '../../runner/src/cells/provider.js';
import type { CellResult, EgressDenial, WorktreeDiff } from '../../runner/src/protocol/cellResult.js';
import type { CellSpecInput } from '../../runner/src/protocol/cellSpec.js';
import type { ProviderHealth } from '../../runner/src/protocol/health.js';
import type { IsolationReport } from '../../runner/src/protocol/isolation.js';

/** One cell as the script sees it: what was asked, and the worktree as it is now. */
export interface FakeCell {
  spec: CellSpecInput;
  cmd: string;
  /** forge.purpose label: baseline, verdict, ground_truth, run_command, run_tests, install... */
  purpose: string;
  /** forge.attempt label; null for the run's own cells (baseline, ground truth, install). */
  attempt: number | null;
  worktree: string;
  /** A file of the worktree (relative path), null when it does not exist. */
  read(path: string): string | null;
}

export interface FakeCellOutcome {
  exit_code: number;
  output: string;
  timed_out?: boolean;
  /** Overrides the (empty, complete) diff a capture_diff cell reports. */
  diff?: Partial<WorktreeDiff>;
  /** Never returns by itself: ends when the run's signal aborts (killed_by cancel, as the real lifecycle says). */
  hang?: boolean;
  /** What the egress proxy refused the cell (an allow_net cell's record); default none. */
  egress_denied?: EgressDenial[];
}

export type FakeCellScript = (cell: FakeCell) => FakeCellOutcome | Promise<FakeCellOutcome>;

const ISOLATION: IsolationReport = {
  mechanism: 'in-process fake',
  degraded: true,
  namespaces: [],
  net: 'none',
  filesystem: 'the worktree, read by the script',
  user: 'the test process',
  masked_paths: [],
  rlimits: { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
  cgroup: { version: null, memory_max_bytes: null, pids_max: null, cpu_quota_cores: null, reason: 'no process' },
  warnings: [],
};

/**
 * A CellProvider that runs nothing: a scripted function decides each cell's result from its
 * spec and the worktree files as they are (so the edits the replay model's tools made decide
 * the outcome). The pipeline's decisions are then tested in milliseconds; the real providers
 * keep their own end-to-end tests. Every cell is kept in `cells` for assertions.
 */
export class FakeCellProvider implements CellProvider {
  readonly name = 'host' as const;
  readonly cells: FakeCell[] = [];
  private seq = 0;
  /** Called when a cell starts (before the script answers), e.g. to cancel a run mid-attempt. */
  onCell: ((cell: FakeCell) => void) | null = null;

  constructor(private script: FakeCellScript) {}

  /** Replaces the script (e.g. a resumed run whose cells no longer hang). */
  setScript(script: FakeCellScript): void {
    this.script = script;
  }

  async health(): Promise<ProviderHealth> {
    return { provider: 'host', available: true, reason: 'in-process fake', isolation: ISOLATION, details: {} };
  }

  async drain(): Promise<void> {}

  async run(spec: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const labels = spec.labels ?? {};
    const worktree = spec.worktree ?? '';
    const cell: FakeCell = {
      spec,
      cmd: Array.isArray(spec.cmd) ? spec.cmd.join(' ') : String(spec.cmd),
      purpose: labels['forge.purpose'] ?? 'cell',
      attempt: labels['forge.attempt'] === undefined ? null : Number(labels['forge.attempt']),
      worktree,
      read: (path) => (existsSync(join(worktree, path)) ? readFileSync(join(worktree, path), 'utf8') : null),
    };
    this.cells.push(cell);
    this.onCell?.(cell);
    const started = Date.now();
    const outcome = await this.script(cell);
    let killed = false;
    if (outcome.hang) killed = await untilAborted(options.signal);
    else if (options.signal?.aborted) killed = true;
    return {
      cell_id: `fake-${++this.seq}`,
      provider: 'host',
      image: spec.image ?? '',
      exit_code: killed ? 137 : outcome.exit_code,
      signal: killed ? 'SIGKILL' : null,
      timed_out: outcome.timed_out ?? false,
      killed_by: killed ? 'cancel' : outcome.timed_out ? 'timeout' : null,
      limits_hit: [],
      duration_ms: Date.now() - started,
      output: outcome.output,
      output_truncated: false,
      output_bytes: Buffer.byteLength(outcome.output),
      // Nothing there: the verdict parsers read `output` instead.
      full_output_path: join(worktree, '.fake-cell-has-no-log'),
      diff:
        spec.capture_diff === false
          ? null
          : {
              patch: '',
              truncated: false,
              bytes: 0,
              files: [],
              files_total: 0,
              omitted: [],
              warnings: [],
              incomplete: null,
              ...outcome.diff,
            },
      neutralized: [],
      egress_denied: outcome.egress_denied ?? [],
      egress_denied_more: 0,
      isolation: ISOLATION,
      labels,
    };
  }
}

function untilAborted(signal: AbortSignal | undefined): Promise<boolean> {
  if (!signal) return new Promise(() => undefined);
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(true), { once: true }));
}

/** pytest's console for these outcomes (what the verdict parsers read). */
export function pytestOutput(tests: Record<string, boolean>): FakeCellOutcome {
  const names = Object.entries(tests);
  const failed = names.filter(([, ok]) => !ok).length;
  const passed = names.length - failed;
  const lines = names.map(([name, ok]) => `${ok ? 'PASSED' : 'FAILED'} ${name}`);
  const summary = [failed ? `${failed} failed` : '', passed ? `${passed} passed` : ''].filter(Boolean).join(', ');
  return { exit_code: failed > 0 ? 1 : 0, output: `${lines.join('\n')}\n${summary} in 0.01s\n` };
}
