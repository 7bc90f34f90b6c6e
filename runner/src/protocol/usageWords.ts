import type { Usage } from './usage.js';

/**
 * Time and tokens in words, the same in summary.md, the CLI, the Attempts view and the details
 * page (pure; here so the editor and the webview, which import only the protocol, share them).
 */

/** Tokens summed, and how many turns reported none: describeTokens' input. */
export interface TokenFigures {
  turns: number;
  input_tokens: number;
  output_tokens: number;
  unknown_turns: number;
  estimated: boolean;
}

/** Pure: "12.4k" for people (tokens). */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 10_000) return `${(n / 1000).toFixed(1)}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Pure: "41 s", "2 min 5 s" for people (milliseconds). */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return ms < 1000 && ms > 0 ? `${(ms / 1000).toFixed(1)} s` : `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
}

/** Pure: tokens in words, honest about what is not known: "3.1k in / 540 out", "unknown", "1.2k in / 300 out (+2 turns unknown)". */
export function describeTokens(t: TokenFigures): string {
  if (t.turns > 0 && t.unknown_turns === t.turns) return 'tokens unknown';
  const base = `${formatTokens(t.input_tokens)} in / ${formatTokens(t.output_tokens)} out${t.estimated ? ' (estimated)' : ''}`;
  return t.unknown_turns > 0 ? `${base} (+${t.unknown_turns} turn(s) unknown)` : base;
}

/** Pure: a cost for people, in the currency of the user's prices (none is assumed); null without one. */
export function formatCost(cost: number | null): string | null {
  if (cost === null) return null;
  return `cost ~${cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2)}`;
}

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
