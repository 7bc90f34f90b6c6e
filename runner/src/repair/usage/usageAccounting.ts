import type { ModelPriceInput } from '../../protocol/usage.js';

/**
 * Pure accounting of what attempts and runs cost: model turns, input and output tokens,
 * wall and cell time, and a cost estimate only when the user gave prices. No I/O here: the
 * store, the report and the views all sum through these functions so they cannot disagree.
 */

/** What one model turn used, as its endpoint reported it; null: not reported (counted as unknown, never guessed as 0). */
export interface TurnUsage {
  input: number | null;
  output: number | null;
  /** The figures are an estimate (VS Code's countTokens), not the provider's own count. */
  estimated: boolean;
}

export const UNKNOWN_USAGE: TurnUsage = { input: null, output: null, estimated: false };

/** Prices per million tokens, the user's own (a setting or a flag); never shipped, never read from a repository. */
export type ModelPrice = ModelPriceInput;

export interface UsageTotals {
  turns: number;
  input_tokens: number;
  output_tokens: number;
  /** Turns whose endpoint reported no usage (older runs, a server without usage): their tokens are not in the sums. */
  unknown_turns: number;
  /** Some turn's figures are estimates. */
  estimated: boolean;
}

export const NO_USAGE: UsageTotals = { turns: 0, input_tokens: 0, output_tokens: 0, unknown_turns: 0, estimated: false };

/** Pure: the totals with one more turn. A turn with one side reported counts that side; it is unknown only when neither is. */
export function addTurn(t: UsageTotals, u: TurnUsage): UsageTotals {
  const known = u.input !== null || u.output !== null;
  return {
    turns: t.turns + 1,
    input_tokens: t.input_tokens + (u.input ?? 0),
    output_tokens: t.output_tokens + (u.output ?? 0),
    unknown_turns: t.unknown_turns + (known ? 0 : 1),
    estimated: t.estimated || (known && u.estimated),
  };
}

/** Pure: totals of several (attempts into a run). */
export function sumUsage(all: UsageTotals[]): UsageTotals {
  return all.reduce(
    (a, b) => ({
      turns: a.turns + b.turns,
      input_tokens: a.input_tokens + b.input_tokens,
      output_tokens: a.output_tokens + b.output_tokens,
      unknown_turns: a.unknown_turns + b.unknown_turns,
      estimated: a.estimated || b.estimated,
    }),
    NO_USAGE,
  );
}

/** Input plus output: what the budgets count. */
export function totalTokens(t: Pick<UsageTotals, 'input_tokens' | 'output_tokens'>): number {
  return t.input_tokens + t.output_tokens;
}

/**
 * Pure: the cost in the price's currency, only with a price (null without: no table is shipped
 * that would go stale). Rounded to a hundredth of a cent. Tokens of unknown turns are not in it:
 * the caller says so beside it.
 */
export function costEstimate(t: Pick<UsageTotals, 'input_tokens' | 'output_tokens'>, price: ModelPrice | null | undefined): number | null {
  if (!price) return null;
  const cost = (t.input_tokens * price.input_per_mtok + t.output_tokens * price.output_per_mtok) / 1_000_000;
  return Math.round(cost * 10_000) / 10_000;
}

/** Why an attempt stops for its budget: its own tokens, or the run's shared tokens. */
export type BudgetStop = 'tokens' | 'run_tokens';

/**
 * Pure: before a turn, whether a budget forbids it. Counts input + output tokens spent so far
 * (the attempt's; the run's across its K attempts). A budget that is reached is spent: the turn
 * that would cross it is not started, since its size is only known once paid for.
 */
export function budgetBeforeTurn(
  attemptTokens: number,
  maxTokens: number,
  runTokens: number,
  maxRunTokens: number | null | undefined,
): BudgetStop | null {
  if (attemptTokens >= maxTokens) return 'tokens';
  if (maxRunTokens != null && runTokens >= maxRunTokens) return 'run_tokens';
  return null;
}

/** The agent loop's stops that mean "its budget ran out": such an attempt is shown as "budget". */
export function isBudgetStop(stop: string | null | undefined): stop is BudgetStop {
  return stop === 'tokens' || stop === 'run_tokens';
}

/** Tokens shared by the K attempts of a run (one object per run, in this runner process). */
export class RunTokenBudget {
  constructor(
    readonly max: number | null,
    /** What earlier processes spent (a resumed run's kept attempts). */
    private spent = 0,
  ) {}

  get used(): number {
    return this.spent;
  }

  add(tokens: number): void {
    this.spent += tokens;
  }
}
