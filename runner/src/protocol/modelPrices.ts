import { z } from 'zod';
import type { ModelPriceInput as ModelPrice } from './usage.js';

export { priceForModel } from './modelPriceLookup.js';

const perMTok = z.number().finite().min(0).max(1_000_000);

/**
 * The user's prices by model, as the editor setting `forge.modelPrices` and a `--price FILE`
 * hold them: {"<model>": {"inputPerMTok": 3, "outputPerMTok": 15}}. Prices come from the user
 * only (settings, flags): a repository's files never set them, and none are shipped.
 */
export const ModelPricesSchema = z
  .record(z.string().min(1).max(4096), z.object({ inputPerMTok: perMTok, outputPerMTok: perMTok }).strict())
  .refine((m) => Object.keys(m).length <= 1000, 'at most 1000 models');

export type ModelPrices = z.infer<typeof ModelPricesSchema>;

/** Pure: `input=3,output=15` (per million tokens) -> a price; null when it is not of that shape. */
export function parsePricePairs(text: string): ModelPrice | { error: string } | null {
  if (!text.includes('=')) return null;
  const fields = new Map<string, number>();
  for (const part of text.split(',')) {
    const [k, v, extra] = part.split('=').map((x) => x.trim());
    if (!k || v === undefined || extra !== undefined || (k !== 'input' && k !== 'output'))
      return { error: `expected input=N,output=M (prices per million tokens), got "${part}"` };
    const n = Number(v);
    if (v === '' || !Number.isFinite(n) || n < 0 || n > 1_000_000) return { error: `${k}=${v} is not a price from 0 to 1000000` };
    fields.set(k, n);
  }
  if (!fields.has('input') || !fields.has('output')) return { error: 'give both input=N and output=M (prices per million tokens)' };
  return { input_per_mtok: fields.get('input')!, output_per_mtok: fields.get('output')! };
}
