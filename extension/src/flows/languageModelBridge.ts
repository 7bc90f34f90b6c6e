import * as vscode from 'vscode';
import type { z } from 'zod';
import type { ModelReplyRequestSchema, ModelReplySchema } from '../../../runner/src/protocol/rpcFix.js';

type ModelRequest = z.output<typeof ModelReplyRequestSchema>;
type ModelReply = z.input<typeof ModelReplySchema>;

/** Runner messages -> VS Code language model messages (system text goes first as a user message: the API has no system role). */
export function toChatMessages(req: ModelRequest): vscode.LanguageModelChatMessage[] {
  return req.messages.map((m) => {
    if (m.role === 'assistant') {
      const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] = [];
      if (m.content) parts.push(new vscode.LanguageModelTextPart(m.content));
      for (const c of m.tool_calls ?? []) parts.push(new vscode.LanguageModelToolCallPart(c.id, c.name, c.arguments));
      return vscode.LanguageModelChatMessage.Assistant(parts);
    }
    if (m.role === 'tool') {
      return vscode.LanguageModelChatMessage.User([
        new vscode.LanguageModelToolResultPart(m.tool_call_id ?? '', [new vscode.LanguageModelTextPart(m.content)]),
      ]);
    }
    return vscode.LanguageModelChatMessage.User(m.content);
  });
}

/** The VS Code language model family the latest run asked for (forge.model `vscode-lm:FAMILY`); null: any. */
export class LanguageModelChoice {
  family: string | null = null;
}

/**
 * Answers the runner's model/reply requests with a VS Code language model (vscode.lm, e.g.
 * Copilot). The reply goes back to the runner, which validates it like any model output.
 */
export async function replyWithLanguageModel(
  req: ModelRequest,
  family: string | null,
  token?: vscode.CancellationToken,
): Promise<ModelReply> {
  const models = await vscode.lm.selectChatModels(family ? { family } : {});
  const model = models[0];
  if (!model)
    throw new Error(
      `no VS Code language model${family ? ` of family ${family}` : ''} is available; sign in to a provider (e.g. GitHub Copilot) or set forge.model to another model`,
    );
  const messages = toChatMessages(req);
  const response = await model.sendRequest(
    messages,
    {
      tools: req.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
      modelOptions: { temperature: req.temperature },
    },
    token,
  );
  let content = '';
  const toolCalls: ModelReply['tool_calls'] = [];
  for await (const part of response.stream) {
    if (part instanceof vscode.LanguageModelTextPart) content += part.value;
    else if (part instanceof vscode.LanguageModelToolCallPart)
      toolCalls.push({ id: part.callId, name: part.name, arguments: (part.input ?? {}) as Record<string, unknown> });
  }
  const usage = await estimateUsage(model, messages, content, toolCalls, token);
  return { content: content || null, tool_calls: toolCalls, tokens: (usage.input ?? 0) + (usage.output ?? 0), usage };
}

/**
 * vscode.lm does not say what a request used: the model's own tokenizer (countTokens) counts the
 * messages sent and the reply received, marked as an estimate. A count that fails is unknown
 * (null), not guessed.
 */
async function estimateUsage(
  model: vscode.LanguageModelChat,
  messages: vscode.LanguageModelChatMessage[],
  content: string,
  toolCalls: ModelReply['tool_calls'],
  token?: vscode.CancellationToken,
): Promise<{ input: number | null; output: number | null; estimated: true }> {
  const count = async (what: string | vscode.LanguageModelChatMessage): Promise<number | null> => {
    try {
      const n = await model.countTokens(what, token);
      return Number.isSafeInteger(n) && n >= 0 ? n : null;
    } catch {
      return null;
    }
  };
  const inputs = await Promise.all(messages.map((m) => count(m)));
  const input = inputs.some((n) => n === null) ? null : inputs.reduce<number>((a, b) => a + (b ?? 0), 0);
  const reply = content + toolCalls.map((c) => `${c.name}${JSON.stringify(c.arguments)}`).join('');
  const output = reply ? await count(reply) : 0;
  return { input, output, estimated: true };
}
