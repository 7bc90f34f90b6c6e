import { TOOL_SPECS } from '../tools/toolSpecs.js';
import { postJson, reportedCount } from './httpModel.js';
import type { TurnUsage } from '../usage/usageAccounting.js';
import type { ChatMessage, ModelReply, ModelRequest, RepairModel } from './repairModel.js';

interface AnthropicConfig {
  baseUrl: string;
  apiKey: string;
  model: string;
}

/** Anthropic Messages API with tool use. */
export class AnthropicModel implements RepairModel {
  constructor(
    readonly spec: string,
    private readonly config: AnthropicConfig,
  ) {}

  async reply(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    const system = request.messages
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .join('\n\n');
    const body = {
      model: this.config.model,
      max_tokens: 4096,
      temperature: Math.min(request.temperature, 1),
      system,
      messages: toAnthropic(request.messages.filter((m) => m.role !== 'system')),
      tools: TOOL_SPECS.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })),
    };
    const res = (await postJson(
      `${this.config.baseUrl.replace(/\/$/, '')}/v1/messages`,
      {
        'x-api-key': this.config.apiKey,
        'anthropic-version': '2023-06-01',
      },
      body,
      signal,
    )) as {
      content?: ({ type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> })[];
      usage?: { input_tokens?: unknown; output_tokens?: unknown; cache_read_input_tokens?: unknown; cache_creation_input_tokens?: unknown };
    };
    if (!Array.isArray(res.content)) throw new Error('model endpoint answered without content blocks');
    const text = res.content
      .filter((b): b is { type: 'text'; text: string } => b.type === 'text')
      .map((b) => b.text)
      .join('\n');
    return {
      content: text || null,
      tool_calls: res.content
        .filter((b) => b.type === 'tool_use')
        .map((b) => {
          const u = b as { id: string; name: string; input: Record<string, unknown> };
          return { id: u.id, name: u.name, arguments: u.input ?? {} };
        }),
      usage: anthropicUsage(res.usage),
    };
  }
}

/**
 * Pure: Anthropic reports cached prompt tokens apart from input_tokens (read from, or written
 * to, the prompt cache): they were sent, so they count as input here.
 */
export function anthropicUsage(u: Record<string, unknown> | undefined): TurnUsage {
  const parts = [u?.input_tokens, u?.cache_read_input_tokens, u?.cache_creation_input_tokens].map(reportedCount);
  const input = parts.every((p) => p === null) ? null : parts.reduce<number>((n, p) => n + (p ?? 0), 0);
  return { input, output: reportedCount(u?.output_tokens), estimated: false };
}

/** Tool results go back as tool_result blocks in one user message per assistant turn. */
function toAnthropic(messages: ChatMessage[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content };
      const last = out[out.length - 1];
      if (last?.role === 'user' && Array.isArray(last.content)) (last.content as unknown[]).push(block);
      else out.push({ role: 'user', content: [block] });
    } else if (m.role === 'assistant') {
      const blocks: unknown[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const c of m.tool_calls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
      out.push({ role: 'assistant', content: blocks.length ? blocks : [{ type: 'text', text: '' }] });
    } else {
      out.push({ role: 'user', content: m.content });
    }
  }
  return out;
}
