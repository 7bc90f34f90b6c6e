import { stripVTControlCharacters } from 'node:util';
import type { CellResult } from '../protocol/cellResult.js';
import type { ChatMessage, ModelReply, RepairModel, ToolCall } from './models/repairModel.js';
import { TOOL_NAMES } from './models/replayScript.js';
import { addTurn, budgetBeforeTurn, NO_USAGE, type RunTokenBudget, totalTokens, type UsageTotals } from './usage/usageAccounting.js';
import { editFile, listFiles, readFile, searchFiles, writeFile } from './tools/fileTools.js';
import { ToolError } from './tools/toolError.js';

export interface AgentBudget {
  maxTurns: number;
  /** Epoch ms after which no new turn starts. */
  deadline: number;
  maxTokens: number;
  /** The run's tokens, shared by its K attempts (--max-run-tokens); absent: no run budget. */
  run?: RunTokenBudget;
}

export interface AgentContext {
  attemptIndex: number;
  worktree: string;
  issue: string;
  testCmd: string;
  temperature: number;
  model: RepairModel;
  budget: AgentBudget;
  /** Runs a command in a fresh cell on the attempt's worktree; `turn` is the model turn that asked. */
  runCell(command: string, purpose: 'run_tests' | 'run_command', turn: number): Promise<CellResult>;
  recordTurn(turnIndex: number, reply: ModelReply, results: { call: ToolCall; result: string }[]): void;
  /** Told the path of every file write_file or edit_file wrote (relative to the worktree, links resolved). */
  fileWritten?(rel: string): void;
  signal?: AbortSignal;
}

export interface AgentOutcome {
  turns: number;
  /** Input plus output tokens (what the budgets count). */
  tokens: number;
  usage: UsageTotals;
  /** Why the loop stopped ('tokens': its own budget; 'run_tokens': the run's, shared by its attempts). */
  stop: 'finish' | 'no_tool_calls' | 'max_turns' | 'deadline' | 'tokens' | 'run_tokens' | 'cancelled';
  summary: string | null;
}

const SYSTEM_PROMPT = `You repair a bug in a git repository. Tools: ${TOOL_NAMES.join(', ')}.
Paths are relative to the repository root. Edit files with edit_file (old_string must match exactly once) or write_file.
run_tests runs the project's tests in a fresh sandbox; run_command runs one shell command there. Call finish with a summary when done.`;

/** Output a cell shows the model: its tail, where test failures are reported. */
const CELL_OUTPUT_TO_MODEL = 6000;

export async function runAgentLoop(ctx: AgentContext): Promise<AgentOutcome> {
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: `Issue:\n${ctx.issue}\n\nTest command: ${ctx.testCmd}` },
  ];
  let usage = NO_USAGE;
  const ended = (turns: number, stop: AgentOutcome['stop'], summary: string | null): AgentOutcome => ({
    turns,
    tokens: totalTokens(usage),
    usage,
    stop,
    summary,
  });
  for (let turn = 0; turn < ctx.budget.maxTurns; turn++) {
    if (ctx.signal?.aborted) return ended(turn, 'cancelled', null);
    if (Date.now() > ctx.budget.deadline) return ended(turn, 'deadline', null);
    // Input and output both count, checked before the turn is paid for.
    const over = budgetBeforeTurn(totalTokens(usage), ctx.budget.maxTokens, ctx.budget.run?.used ?? 0, ctx.budget.run?.max);
    if (over) return ended(turn, over, null);
    const reply = await ctx.model.reply(
      { attemptIndex: ctx.attemptIndex, turnIndex: turn, temperature: ctx.temperature, messages },
      ctx.signal,
    );
    usage = addTurn(usage, reply.usage);
    ctx.budget.run?.add((reply.usage.input ?? 0) + (reply.usage.output ?? 0));
    messages.push({ role: 'assistant', content: reply.content ?? '', tool_calls: reply.tool_calls });
    if (reply.tool_calls.length === 0) {
      ctx.recordTurn(turn, reply, []);
      return ended(turn + 1, 'no_tool_calls', reply.content);
    }
    const results: { call: ToolCall; result: string }[] = [];
    let finished: string | null = null;
    for (const call of reply.tool_calls) {
      const result = await executeTool(ctx, call, turn);
      results.push({ call, result });
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
      if (call.name === 'finish') finished = typeof call.arguments.summary === 'string' ? call.arguments.summary : '';
    }
    ctx.recordTurn(turn, reply, results);
    if (finished !== null) return ended(turn + 1, 'finish', finished);
  }
  return ended(ctx.budget.maxTurns, 'max_turns', null);
}

/** Runs one tool call; a mistake of the model becomes an error message back to it. */
async function executeTool(ctx: AgentContext, call: ToolCall, turn: number): Promise<string> {
  const a = call.arguments;
  try {
    switch (call.name) {
      case 'list_files':
        return listFiles(ctx.worktree, a);
      case 'read_file':
        return readFile(ctx.worktree, a);
      case 'search':
        return searchFiles(ctx.worktree, a);
      case 'write_file':
        return writeFile(ctx.worktree, a, ctx.fileWritten);
      case 'edit_file':
        return editFile(ctx.worktree, a, ctx.fileWritten);
      case 'run_tests':
        return describeCell(await ctx.runCell(ctx.testCmd, 'run_tests', turn));
      case 'run_command': {
        if (typeof a.command !== 'string' || a.command.trim() === '') throw new ToolError('command must be a non-empty string');
        return describeCell(await ctx.runCell(a.command, 'run_command', turn));
      }
      case 'finish':
        return 'finished';
      default:
        throw new ToolError(`unknown tool ${call.name}; available: ${TOOL_NAMES.join(', ')}`);
    }
  } catch (e) {
    if (e instanceof ToolError) return `error: ${e.message}`;
    throw e;
  }
}

/**
 * What the model reads of a cell: plain text. Colour and cursor codes (a test runner that
 * colours its output anyway) cost tokens and hide the words a model has to read.
 */
export function describeCell(r: CellResult): string {
  const plainOutput = stripVTControlCharacters(r.output).replace(/\r\n?/g, '\n');
  const out = plainOutput.length > CELL_OUTPUT_TO_MODEL ? '[...]\n' + plainOutput.slice(-CELL_OUTPUT_TO_MODEL) : plainOutput;
  const how = r.killed_by ? `killed by ${r.killed_by}` : `exit code ${r.exit_code}`;
  return `${how}\n${out}`;
}
