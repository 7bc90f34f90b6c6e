import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { describeZodError, InputError } from '../../protocol/inputError.js';

/** The tools a repair agent may call; a replay file naming another one is rejected up front. */
export const TOOL_NAMES = ['list_files', 'read_file', 'search', 'write_file', 'edit_file', 'run_tests', 'run_command', 'finish'] as const;

const ToolCallSchema = z
  .object({
    name: z.enum(TOOL_NAMES),
    arguments: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

/** A bound on one turn's figures: far above any model's context, so a typo (an extra digit run) is refused, not summed. */
export const MAX_TURN_TOKENS = 100_000_000;
const count = z.number().int().min(0).max(MAX_TURN_TOKENS);
/** What the scripted turn "used": lets tests drive the usage accounting and the token budgets. Absent: not reported. */
const UsageSchema = z.object({ input: count, output: count }).strict();

const TurnSchema = z.union([
  z.object({ tool_calls: z.array(ToolCallSchema).min(1), usage: UsageSchema.optional() }).strict(),
  z.object({ content: z.string(), usage: UsageSchema.optional() }).strict(),
]);

/** `--model replay:FILE`: scripted model turns for offline runs, tests and the demo. */
export const ReplayScriptSchema = z
  .object({
    version: z.literal(1),
    attempts: z.array(z.array(TurnSchema).min(1)).min(1),
  })
  .strict();

export type ReplayScript = z.infer<typeof ReplayScriptSchema>;
export type ReplayTurn = z.infer<typeof TurnSchema>;

/** Pure: attempt i plays attempts[i % n]. */
export function turnsForAttempt(script: ReplayScript, attemptIndex: number): ReplayTurn[] {
  return script.attempts[attemptIndex % script.attempts.length]!;
}

export function parseReplayScript(text: string, source: string): ReplayScript {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError(`replay file ${source} is not JSON (${(e as Error).message.split('\n')[0]})`);
  }
  const parsed = ReplayScriptSchema.safeParse(json);
  if (!parsed.success) throw new InputError(`${describeZodError(`replay file ${source}`, parsed.error)}`);
  return parsed.data;
}

export function loadReplayScript(path: string): ReplayScript {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new InputError(`cannot read replay file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parseReplayScript(text, path);
}
