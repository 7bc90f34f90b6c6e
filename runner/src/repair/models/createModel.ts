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
    const baseUrl = env.FORGE_BASE_URL || env.OPENAI_BASE_URL || 'https://api.openai.com/v1';
    return new OpenAiCompatibleModel(spec, { baseUrl, apiKey: env.FORGE_API_KEY || env.OPENAI_API_KEY || '', model });
  }
  if (kind === 'anthropic') {
    const model = arg || env.FORGE_MODEL;
    if (!model) throw new InputError('--model anthropic needs a model name: anthropic:MODEL or FORGE_MODEL');
    if (!env.ANTHROPIC_API_KEY) throw new InputError('--model anthropic needs ANTHROPIC_API_KEY in the environment');
    return new AnthropicModel(spec, { baseUrl: env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com', apiKey: env.ANTHROPIC_API_KEY, model });
  }
  throw new InputError(`unknown model "${spec}"; use replay:FILE, openai[:MODEL] or anthropic[:MODEL]`);
}
