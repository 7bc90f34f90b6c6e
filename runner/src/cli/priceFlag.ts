import { readFileSync, statSync } from 'node:fs';
import { describeZodError, InputError } from '../protocol/inputError.js';
import { ModelPricesSchema, parsePricePairs, priceForModel } from '../protocol/modelPrices.js';
import type { ModelPrice } from '../repair/usage/usageAccounting.js';

/** Bigger than any price list a person writes; a larger file is refused before it is read. */
const MAX_PRICE_FILE = 1_000_000;

/**
 * `--price input=3,output=15` (per million tokens), or `--price FILE`: a JSON file of the
 * editor's forge.modelPrices shape, from which the run's model is picked. The user's word only:
 * never read from the repository. Refused with one line naming the flag.
 */
export function priceFromFlag(raw: string, model: string): ModelPrice {
  const pairs = parsePricePairs(raw);
  if (pairs && 'error' in pairs) throw new InputError(`--price ${raw}: ${pairs.error}`);
  if (pairs) return pairs;
  let text: string;
  try {
    if (statSync(raw).size > MAX_PRICE_FILE) throw new InputError(`--price ${raw}: the file is over 1 MB; a price list is small`);
    text = readFileSync(raw, 'utf8');
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(
      `--price ${raw}: neither input=N,output=M nor a readable JSON file (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InputError(`--price ${raw} is not JSON; expected {"MODEL": {"inputPerMTok": N, "outputPerMTok": M}}`);
  }
  const parsed = ModelPricesSchema.safeParse(json);
  if (!parsed.success) throw new InputError(describeZodError(`--price ${raw}`, parsed.error));
  const price = priceForModel(parsed.data, model);
  if (!price) throw new InputError(`--price ${raw} names no price for the model ${model}; add "${model}" to it`);
  return price;
}
