import { InputError } from '../../protocol/inputError.js';
import { AnthropicModel } from './anthropicModel.js';
import { OpenAiCompatibleModel } from './openAiCompatibleModel.js';
import type { RepairModel } from './repairModel.js';
import { ReplayModel } from './replayModel.js';

/**
 * `--model SPEC`:
 *   replay:FILE          scripted turns (offline)
 *   openai[:MODEL]       chat completions at FORGE_BASE_URL / OPENAI_BASE_URL (default api.openai.com),
 *                        key FORGE_API_KEY / OPENAI_API_KEY, model MODEL or FORGE_MODEL
 *   anthropic[:MODEL]    Messages API, key ANTHROPIC_API_KEY, model MODEL or FORGE_MODEL
 * Keys are read here, in the runner; cells get a scrubbed environment.
 */
const OPENAI_DEFAULT_URL = 'https://api.openai.com/v1';

export function createModel(spec: string, env: NodeJS.ProcessEnv = process.env): RepairModel {
  const [kind, ...rest] = spec.split(':');
  const arg = rest.join(':');
  if (kind === 'replay') {
    if (arg === '') throw new InputError('--model replay:FILE needs a file, e.g. --model replay:samples/py-calc/replay.json');
    return ReplayModel.fromFile(arg);
  }
  if (kind === 'openai') {
    const model = arg || env.FORGE_MODEL;
    if (!model) throw new InputError('--model openai needs a model name: openai:MODEL or FORGE_MODEL');
    const baseUrl = env.FORGE_BASE_URL || env.OPENAI_BASE_URL || OPENAI_DEFAULT_URL;
    const apiKey = env.FORGE_API_KEY || env.OPENAI_API_KEY || '';
    // A local server (Ollama, llama.cpp, vLLM) may need no key; OpenAI itself always does.
    let host: string;
    try {
      host = new URL(baseUrl).hostname;
    } catch {
      throw new InputError(
        `model endpoint "${baseUrl}" (FORGE_BASE_URL / OPENAI_BASE_URL) is not a URL; use e.g. http://localhost:11434/v1`,
      );
    }
    if (!apiKey && host === 'api.openai.com') {
      throw new InputError(
        '--model openai talks to api.openai.com, which needs a key: set FORGE_API_KEY or OPENAI_API_KEY (or FORGE_BASE_URL for a server that needs none)',
      );
    }
    return new OpenAiCompatibleModel(spec, { baseUrl, apiKey, model });
  }
  if (kind === 'anthropic') {
    const model = arg || env.FORGE_MODEL;
    if (!model) throw new InputError('--model anthropic needs a model name: anthropic:MODEL or FORGE_MODEL');
    if (!env.ANTHROPIC_API_KEY) throw new InputError('--model anthropic needs ANTHROPIC_API_KEY in the environment');
    return new AnthropicModel(spec, {
      baseUrl: env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com',
      apiKey: env.ANTHROPIC_API_KEY,
      model,
    });
  }
  throw new InputError(`unknown model "${spec}"; use replay:FILE, openai[:MODEL] or anthropic[:MODEL]`);
}
