import { TOOL_SPECS } from '../tools/toolSpecs.js';
import { parseArguments, postJson, reportedCount } from './httpModel.js';
import type { ChatMessage, ModelReply, ModelRequest, RepairModel } from './repairModel.js';

interface OpenAiConfig {
  baseUrl: string;
  apiKey: string;
  model: string;
}

/** Chat completions with tool calls: OpenAI, vLLM, Ollama, llama.cpp server. */
export class OpenAiCompatibleModel implements RepairModel {
  constructor(
    readonly spec: string,
    private readonly config: OpenAiConfig,
  ) {}

  async reply(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    const body = {
      model: this.config.model,
      temperature: request.temperature,
      messages: request.messages.map(toOpenAi),
      tools: TOOL_SPECS.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
    };
    const headers: Record<string, string> = this.config.apiKey ? { authorization: `Bearer ${this.config.apiKey}` } : {};
    const res = (await postJson(`${this.config.baseUrl.replace(/\/$/, '')}/chat/completions`, headers, body, signal)) as {
      choices?: { message?: { content?: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[] } }[];
      usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
    };
    const message = res.choices?.[0]?.message;
    if (!message) throw new Error('model endpoint answered without a message (choices[0].message)');
    return {
      content: message.content ?? null,
      tool_calls: (message.tool_calls ?? []).map((c) => ({
        id: c.id,
        name: c.function.name,
        arguments: parseArguments(c.function.arguments),
      })),
      // Cached prompt tokens are part of prompt_tokens in this API.
      usage: { input: reportedCount(res.usage?.prompt_tokens), output: reportedCount(res.usage?.completion_tokens), estimated: false },
    };
  }
}

function toOpenAi(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  if (m.role === 'assistant' && m.tool_calls?.length) {
    return {
      role: 'assistant',
      content: m.content || null,
      tool_calls: m.tool_calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: JSON.stringify(c.arguments) },
      })),
    };
  }
  return { role: m.role, content: m.content };
}
