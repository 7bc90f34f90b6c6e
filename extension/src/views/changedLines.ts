import type { AttemptSnapshot } from '../../../runner/src/protocol/rpcFix.js';

/** "+1 −1" as a diff is read (one edited line is one removed and one added); a count from an older runner. */
export function changedLines(a: Pick<AttemptSnapshot, 'diff_size' | 'diff_lines'>): string {
  if (a.diff_lines) return `+${a.diff_lines.added} −${a.diff_lines.removed}`;
  return `${a.diff_size} ${a.diff_size === 1 ? 'line' : 'lines'}`;
}
