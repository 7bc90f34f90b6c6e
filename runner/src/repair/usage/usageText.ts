import type { Usage } from '../../protocol/usage.js';
import { describeTokens, formatCost, formatDuration, formatTokens } from './usageAccounting.js';

/** Pure: tokens of a Usage in words ("3.1k in / 540 out", "tokens unknown"). */
export function usageTokens(u: Usage): string {
  return describeTokens(u);
}

/** Pure: a short figure for a list ("12.4k tok", "? tok"): input + output, with "~" when estimated and "+?" when some turns are unknown. */
export function shortTokens(u: Usage): string {
  if (u.turns > 0 && u.unknown_turns === u.turns) return '? tok';
  return `${u.estimated ? '~' : ''}${formatTokens(u.input_tokens + u.output_tokens)}${u.unknown_turns > 0 ? '+?' : ''} tok`;
}

/** Pure: the whole usage in one line: "41 s (cells 12 s), 3 turns, 3.1k in / 540 out, cost ~0.02". */
export function usageLine(u: Usage): string {
  const parts = [
    `${u.wall_ms === null ? 'time unknown' : formatDuration(u.wall_ms)} (cells ${formatDuration(u.cell_ms)})`,
    `${u.turns} turn${u.turns === 1 ? '' : 's'}`,
    describeTokens(u),
  ];
  const cost = formatCost(u.cost);
  if (cost) parts.push(`${cost}${u.unknown_turns > 0 ? ' (known turns only)' : ''}`);
  return parts.join(', ');
}

/** The result word for an attempt stopped by a budget: which one. */
export function budgetWord(stop: string | null | undefined): string {
  return stop === 'run_tokens' ? "budget (the run's tokens spent)" : 'budget (its tokens spent)';
}
