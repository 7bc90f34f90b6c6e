import assert from 'node:assert/strict';
import { replyWithLanguageModel } from '../../extension/src/flows/languageModelBridge.js';
import { fake, LanguageModelTextPart } from './fakes/vscode.js';

/** vscode.lm reports no usage: the bridge counts with the model's own tokenizer and says it is an estimate (issue 31). */
describe('usage of a VS Code language model turn (issue 31)', () => {
  const req = {
    attempt_index: 0,
    turn_index: 0,
    temperature: 0,
    messages: [
      { role: 'system' as const, content: 'You fix bugs.' },
      { role: 'user' as const, content: 'average is wrong' },
    ],
    tools: [],
  };
  const model = (countTokens?: (what: unknown) => Promise<number>) => ({
    sendRequest: async () => ({
      stream: (async function* () {
        yield new LanguageModelTextPart('Looking.');
      })(),
    }),
    ...(countTokens ? { countTokens } : {}),
  });

  afterEach(() => {
    fake.languageModels = [];
  });

  it("counts the messages sent and the reply with the model's countTokens, marked estimated", async () => {
    fake.languageModels = [model(async (what) => (typeof what === 'string' ? what.length : 10))];
    const reply = await replyWithLanguageModel(req, null);
    assert.deepEqual(reply.usage, { input: 20, output: 'Looking.'.length, estimated: true });
    assert.equal(reply.tokens, 28);
  });

  it('a count that fails is unknown (null), not guessed', async () => {
    fake.languageModels = [model()];
    const reply = await replyWithLanguageModel(req, null);
    assert.deepEqual(reply.usage, { input: null, output: null, estimated: true });
    fake.languageModels = [model(async () => -5)];
    assert.deepEqual((await replyWithLanguageModel(req, null)).usage, { input: null, output: null, estimated: true });
  });
});
