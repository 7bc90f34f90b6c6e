import type { KilledBy } from '../protocol/cellResult.js';

export interface TerminationFacts {
  /** Why the runner itself killed the cell, if it did. */
  killReason: 'timeout' | 'output' | 'cancel' | null;
  oomKills: number;
  pidsLimitHits: number;
  exitCode: number;
  signal: string | null;
}

/**
 * Pure: names the one cause that ended a cell. An OOM kill explains the death even when a
 * timeout fired later; a pids limit only explains a failure the runner did not cause.
 */
export function decideKilledBy(f: TerminationFacts): KilledBy | null {
  if (f.oomKills > 0 && f.exitCode !== 0) return 'memory';
  if (f.killReason === 'output') return 'output';
  if (f.killReason === 'timeout') return 'timeout';
  if (f.killReason === 'cancel') return 'cancel';
  if (f.pidsLimitHits > 0 && f.exitCode !== 0) return 'pids';
  if (f.signal !== null) return 'signal';
  return null;
}
