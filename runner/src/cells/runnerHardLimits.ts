import { readFileSync } from 'node:fs';
import { type HardLimits, parseProcLimits } from './rlimits.js';

let cached: HardLimits | null = null;

/** The runner's own hard resource limits (a cell can be given no more): read once per process. */
export function runnerHardLimits(): HardLimits {
  return (cached ??= parseProcLimits(readFileSync('/proc/self/limits', 'utf8')));
}
