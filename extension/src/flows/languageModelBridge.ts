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
  const response = await model.sendRequest(
    toChatMessages(req),
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
  const chars = req.messages.reduce((n, m) => n + m.content.length, 0) + content.length;
  return { content: content || null, tool_calls: toolCalls, tokens: Math.ceil(chars / 4) };
}
