import { InputError } from '../../protocol/inputError.js';
import type { RepairModel } from './repairModel.js';
import { ReplayModel } from './replayModel.js';

/** `--model SPEC`: replay:FILE today; OpenAI-compatible and Anthropic clients are not built yet. */
export function createModel(spec: string): RepairModel {
  if (spec.startsWith('replay:')) {
    const file = spec.slice('replay:'.length);
    if (file === '') throw new InputError('--model replay:FILE needs a file, e.g. --model replay:samples/py-calc/replay.json');
    return ReplayModel.fromFile(file);
  }
  throw new InputError(`model "${spec}" is not available in this build: only replay:FILE is (OpenAI-compatible and Anthropic clients are not built yet)`);
}
