import assert from 'node:assert/strict';
import { priceFromSetting } from '../../../runner/src/protocol/modelPriceLookup.js';
import { ModelPricesSchema, priceForModel } from '../../../runner/src/protocol/modelPrices.js';

describe('the price of a model from forge.modelPrices (zod-free, read on the extension side)', () => {
  const table = { 'anthropic:claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15 }, 'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 } };

  it('agrees with the zod schema and lookup on a valid table', () => {
    const parsed = ModelPricesSchema.parse(table);
    for (const model of ['anthropic:claude-sonnet-4', 'openai:gpt-4o', 'gpt-4o', 'openai:gpt-5', 'toString'])
      assert.deepEqual(priceFromSetting(table, model), priceForModel(parsed, model), model);
  });

  it('gives no price for a malformed setting or entry instead of throwing', () => {
    for (const bad of [null, 'x', 3, [table], { 'gpt-4o': null }, { 'gpt-4o': { inputPerMTok: -1, outputPerMTok: 1 } }])
      assert.equal(priceFromSetting(bad, 'gpt-4o'), null, JSON.stringify(bad));
    assert.equal(priceFromSetting({ 'gpt-4o': { inputPerMTok: 1, outputPerMTok: Infinity } }, 'gpt-4o'), null);
    assert.equal(priceFromSetting({ 'gpt-4o': { inputPerMTok: 1, outputPerMTok: 2, extra: 1 } }, 'gpt-4o'), null);
    assert.equal(priceFromSetting({ 'gpt-4o': { inputPerMTok: '1', outputPerMTok: 2 } }, 'gpt-4o'), null);
  });
});
