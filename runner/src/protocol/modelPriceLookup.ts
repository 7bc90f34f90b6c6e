/**
 * The user's price for a model, looked up without zod: the extension reads forge.modelPrices
 * on its first frame's import graph, where zod must not load (extension activation in
 * `npm run bench`). The runner validates the chosen price again with ModelPriceSchema.
 */

/** Per million tokens, as the fix request carries it. */
export interface ModelPrice {
  input_per_mtok: number;
  output_per_mtok: number;
}

/** The setting's shape: {"<model>": {"inputPerMTok": 3, "outputPerMTok": 15}}. */
export type ModelPriceTable = Record<string, { inputPerMTok: number; outputPerMTok: number }>;

const MAX_PRICE = 1_000_000;

/**
 * Pure: the price of a model from the user's map: its whole spec ("anthropic:claude-sonnet-4"),
 * else the name after the provider ("claude-sonnet-4"); null when the map names neither.
 */
export function priceForModel(prices: ModelPriceTable, model: string): ModelPrice | null {
  const name = model.includes(':') ? model.slice(model.indexOf(':') + 1) : model;
  const p = Object.prototype.hasOwnProperty.call(prices, model)
    ? prices[model]
    : Object.prototype.hasOwnProperty.call(prices, name)
      ? prices[name]
      : undefined;
  return p ? { input_per_mtok: p.inputPerMTok, output_per_mtok: p.outputPerMTok } : null;
}

const isPrice = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_PRICE;

/**
 * Pure: the price of `model` from a setting read as it is (unknown): null when the setting is not
 * an object, does not name the model, or the model's entry is not two prices from 0 to 1000000
 * (a malformed setting shows no cost rather than stopping a run).
 */
export function priceFromSetting(setting: unknown, model: string): ModelPrice | null {
  if (typeof setting !== 'object' || setting === null || Array.isArray(setting)) return null;
  const table = setting as Record<string, unknown>;
  const name = model.includes(':') ? model.slice(model.indexOf(':') + 1) : model;
  const key = Object.prototype.hasOwnProperty.call(table, model) ? model : Object.prototype.hasOwnProperty.call(table, name) ? name : null;
  if (key === null) return null;
  const entry = table[key];
  if (typeof entry !== 'object' || entry === null) return null;
  const { inputPerMTok, outputPerMTok, ...extra } = entry as Record<string, unknown>;
  if (!isPrice(inputPerMTok) || !isPrice(outputPerMTok) || Object.keys(extra).length > 0) return null;
  return { input_per_mtok: inputPerMTok, output_per_mtok: outputPerMTok };
}
