import type { ModelReply, ModelRequest, RepairModel } from './repairModel.js';
import { UNKNOWN_USAGE } from '../usage/usageAccounting.js';
import { loadReplayScript, type ReplayScript, turnsForAttempt } from './replayScript.js';

/**
 * Plays scripted turns (tests and the offline demo). It only stands in for the model's
 * choices: every tool call it makes runs through the same tool code as a live model's.
 */
export class ReplayModel implements RepairModel {
  constructor(
    readonly spec: string,
    private readonly script: ReplayScript,
  ) {}

  static fromFile(path: string): ReplayModel {
    return new ReplayModel(`replay:${path}`, loadReplayScript(path));
  }

  async reply(request: ModelRequest): Promise<ModelReply> {
    const turns = turnsForAttempt(this.script, request.attemptIndex);
    const turn = turns[request.turnIndex];
    if (!turn) return { content: 'replay script ended', tool_calls: [], usage: UNKNOWN_USAGE };
    // A turn without usage figures reports none, as an endpoint without usage would.
    const usage = turn.usage ? { input: turn.usage.input, output: turn.usage.output, estimated: false } : UNKNOWN_USAGE;
    if ('content' in turn) return { content: turn.content, tool_calls: [], usage };
    return {
      content: null,
      tool_calls: turn.tool_calls.map((c, i) => ({ id: `call-${request.turnIndex}-${i}`, name: c.name, arguments: c.arguments })),
      usage,
    };
  }
}
