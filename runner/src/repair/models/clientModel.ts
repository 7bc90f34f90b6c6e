import { describeZodError } from '../../protocol/inputError.js';
import { ModelReplySchema } from '../../protocol/rpcFix.js';
import { UNKNOWN_USAGE } from '../usage/usageAccounting.js';
import { TOOL_SPECS } from '../tools/toolSpecs.js';
import type { ModelReply, ModelRequest, RepairModel } from './repairModel.js';

/**
 * A model that lives in the client (VS Code's language model API): each turn is a
 * `model/reply` request back over the JSON-RPC connection. The client's answer is untrusted
 * model output like any other: it is schema-checked here and its tool calls go through the
 * same path checks as a local model's.
 */
export class ClientModel implements RepairModel {
  constructor(
    readonly spec: string,
    private readonly ask: (request: unknown, signal?: AbortSignal) => Promise<unknown>,
  ) {}

  async reply(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    const raw = await this.ask(
      {
        attempt_index: request.attemptIndex,
        turn_index: request.turnIndex,
        temperature: request.temperature,
        messages: request.messages,
        tools: TOOL_SPECS,
      },
      signal,
    );
    const parsed = ModelReplySchema.safeParse(raw);
    if (!parsed.success) throw new Error(describeZodError('model/reply answer', parsed.error));
    const { content, tool_calls, usage } = parsed.data;
    // A client that sends only a total (older extensions) reports no split: unknown, not guessed.
    return { content, tool_calls, usage: usage ?? UNKNOWN_USAGE };
  }
}
