import { ModelPriceSchema, type Usage } from '../../protocol/usage.js';
import { costEstimate, type ModelPrice, NO_USAGE, sumUsage, type UsageTotals } from './usageAccounting.js';

/**
 * Pure: the Usage of one attempt or run, as report.json, the snapshots and the views show it,
 * from what the store recorded (times, cell durations, per-turn tokens) and the user's price.
 */
export function usageOf(wallMs: number | null, cellMs: number, totals: UsageTotals, price: ModelPrice | null | undefined): Usage {
  return {
    wall_ms: wallMs === null ? null : Math.max(0, Math.round(wallMs)),
    cell_ms: Math.max(0, Math.round(cellMs)),
    turns: totals.turns,
    input_tokens: totals.input_tokens,
    output_tokens: totals.output_tokens,
    unknown_turns: totals.unknown_turns,
    estimated: totals.estimated,
    cost: costEstimate(totals, price),
  };
}

/** Pure: ms between two ISO times; an attempt still going counts to `nowMs`; null without a start. */
export function wallBetween(startedAt: string | null, finishedAt: string | null, nowMs: number): number | null {
  if (!startedAt) return null;
  const start = Date.parse(startedAt);
  const end = finishedAt ? Date.parse(finishedAt) : nowMs;
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : null;
}

/** Pure: the cell time of each attempt (cells of no attempt: the baseline, ground truth, under null) and of all. */
export function cellTimes(cells: { attempt_idx: number | null; duration_ms: number }[]): { byAttempt: Map<number, number>; all: number } {
  const byAttempt = new Map<number, number>();
  let all = 0;
  for (const c of cells) {
    all += c.duration_ms;
    if (c.attempt_idx !== null) byAttempt.set(c.attempt_idx, (byAttempt.get(c.attempt_idx) ?? 0) + c.duration_ms);
  }
  return { byAttempt, all };
}

/** Pure: a run's usage: its wall time, every cell's time, the attempts' tokens summed. */
export function runUsageOf(wallMs: number | null, allCellMs: number, attempts: UsageTotals[], price: ModelPrice | null | undefined): Usage {
  return usageOf(wallMs, allCellMs, attempts.length ? sumUsage(attempts) : NO_USAGE, price);
}

/** The price a run was started with (its recorded settings; a damaged one is no price). */
export function storedPrice(settingsJson: string | null | undefined): ModelPrice | null {
  try {
    const raw = settingsJson ? (JSON.parse(settingsJson) as { price?: unknown }) : null;
    const parsed = ModelPriceSchema.safeParse(raw?.price);
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
