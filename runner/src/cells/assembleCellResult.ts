import { constants as osConstants } from 'node:os';
import type { CellResult, ProviderName } from '../protocol/cellResult.js';
import type { IsolationReport } from '../protocol/isolation.js';
import type { BoundedOutputSummary } from './boundedOutput.js';
import type { EgressDenied } from './egressDeniedLog.js';
import { decideKilledBy } from './killedBy.js';

export interface CellEnding {
  /** Exit status as the provider saw it; null when the process died of `signal`. */
  code: number | null;
  signal: string | null;
  killReason: 'timeout' | 'output' | 'cancel' | null;
  oomKills: number;
  pidsLimitHits: number;
}

export interface CellFacts {
  cellId: string;
  provider: ProviderName;
  image: string;
  durationMs: number;
  output: BoundedOutputSummary;
  logPath: string;
  diff: CellResult['diff'];
  neutralized: CellResult['neutralized'];
  /** Why the worktree was withheld after the cell, or null (absent: the provider had none to withhold). */
  withheld?: string | null;
  isolation: IsolationReport;
  labels: Record<string, string>;
  /** What the egress proxy refused the cell; absent: nothing (a cell without a grant). */
  egressDenied?: EgressDenied;
}

/** Pure: the CellResult every provider returns, from what it observed. */
export function assembleCellResult(facts: CellFacts, end: CellEnding): CellResult {
  const exitCode = end.code ?? 128 + signalNumber(end.signal);
  // 128+N is how shells, bwrap and container runtimes report a child killed by signal N.
  const signal = end.code === null ? end.signal : exitCode > 128 && exitCode < 160 ? signalName(exitCode - 128) : null;
  const limitsHit: CellResult['limits_hit'] = [];
  if (end.oomKills > 0) limitsHit.push('memory');
  if (end.pidsLimitHits > 0) limitsHit.push('pids');
  if (end.killReason === 'output') limitsHit.push('output');
  if (signal === 'SIGXCPU') limitsHit.push('cpu_time');
  return {
    cell_id: facts.cellId,
    provider: facts.provider,
    image: facts.image,
    exit_code: exitCode,
    signal,
    timed_out: end.killReason === 'timeout',
    killed_by: decideKilledBy({ killReason: end.killReason, oomKills: end.oomKills, pidsLimitHits: end.pidsLimitHits, exitCode, signal }),
    limits_hit: limitsHit,
    duration_ms: facts.durationMs,
    output: facts.output.output,
    output_truncated: facts.output.truncated,
    output_bytes: facts.output.totalBytes,
    full_output_path: facts.logPath,
    diff: facts.diff,
    neutralized: facts.neutralized,
    ...(facts.withheld === undefined ? {} : { worktree_withheld: facts.withheld }),
    egress_denied: facts.egressDenied?.denied ?? [],
    egress_denied_more: facts.egressDenied?.more ?? 0,
    isolation: facts.isolation,
    labels: facts.labels,
  };
}

function signalNumber(signal: string | null): number {
  return signal ? ((osConstants.signals as Record<string, number>)[signal] ?? 0) : 0;
}

function signalName(n: number): string | null {
  for (const [name, num] of Object.entries(osConstants.signals)) if (num === n) return name;
  return null;
}
