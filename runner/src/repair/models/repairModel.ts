import type { TurnUsage } from '../usage/usageAccounting.js';

/** The contract between the agent loop and any model (replay, OpenAI-compatible, Anthropic). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_call_id?: string;
  tool_calls?: ToolCall[];
}

export interface ModelRequest {
  attemptIndex: number;
  turnIndex: number;
  temperature: number;
  messages: ChatMessage[];
}

export interface ModelReply {
  content: string | null;
  tool_calls: ToolCall[];
  /** Input and output tokens of this turn as the endpoint reported them (null: not reported). */
  usage: TurnUsage;
}

export interface RepairModel {
  /** As given on the command line, e.g. "replay:demo.json". */
  readonly spec: string;
  reply(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply>;
}
