import { z } from 'zod';

/** Prices per million tokens, the user's own (an editor setting, `--price`): never shipped, never read from a repository. */
export const ModelPriceSchema = z
  .object({
    input_per_mtok: z.number().min(0).max(1_000_000).describe('Price of a million input tokens, in any currency.'),
    output_per_mtok: z.number().min(0).max(1_000_000).describe('Price of a million output tokens, in the same currency.'),
  })
  .strict();

/** What an attempt or a run took: time, model turns, tokens and, with the user's prices, a cost. */
export const UsageSchema = z
  .object({
    wall_ms: z
      .number()
      .int()
      .nullable()
      .describe('From start to end (null: an attempt that never started, or started before times were kept).'),
    cell_ms: z.number().int().describe("The sum of its cells' durations (a run: every cell, the baseline and ground truth too)."),
    turns: z.number().int().describe('Model turns recorded.'),
    input_tokens: z.number().int().describe('Input tokens the model endpoints reported (cached prompt tokens included).'),
    output_tokens: z.number().int(),
    unknown_turns: z
      .number()
      .int()
      .describe(
        'Turns whose endpoint reported no usage (and turns of runs recorded before usage was kept): their tokens are not in the sums.',
      ),
    estimated: z.boolean().describe("Some figures are the editor's estimate (VS Code's countTokens), not the provider's count."),
    cost: z.number().nullable().describe("Input and output tokens at the user's prices (in their currency); null when no price was given."),
  })
  .strict();

export type Usage = z.infer<typeof UsageSchema>;
export type ModelPriceInput = z.infer<typeof ModelPriceSchema>;
