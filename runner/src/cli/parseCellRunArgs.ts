import { isAbsolute, resolve } from 'node:path';
import type { CellSpecInput } from '../protocol/cellSpec.js';
import { EnvNameSchema } from '../protocol/cellSpec.js';
import { InputError } from '../protocol/inputError.js';
import { checkedNetRules, netRuleList } from './netRuleFlags.js';

export interface CellRunFlags {
  provider: string;
  image?: string;
  worktree?: string;
  timeout?: string;
  allowNet?: string;
  denyNet?: string;
  env: string[];
  memory?: string;
  pids?: string;
  cpus?: string;
  outputLimit?: string;
  diff: boolean;
}

/** Pure: CLI flags + the words after `--` -> CellSpec input (validated later by zod). */
export function cellSpecFromFlags(flags: CellRunFlags, command: string[], cwd: string): CellSpecInput {
  if (command.length === 0 || command.every((w) => w.trim() === '')) {
    throw new InputError('no command given; put it after --, e.g. forge-runner cell run -- npm test');
  }
  const env: Record<string, string> = {};
  for (const pair of flags.env) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new InputError(`--env ${pair}: expected NAME=VALUE`);
    const name = pair.slice(0, eq);
    if (!EnvNameSchema.safeParse(name).success) throw new InputError(`--env ${pair}: "${name}" is not a valid variable name`);
    env[name] = pair.slice(eq + 1);
  }
  const limits: Record<string, number> = {};
  if (flags.memory !== undefined) limits.memory_mib = integerFlag('--memory', flags.memory);
  if (flags.pids !== undefined) limits.pids = integerFlag('--pids', flags.pids);
  if (flags.cpus !== undefined) limits.cpus = numberFlag('--cpus', flags.cpus);
  if (flags.outputLimit !== undefined) limits.output_bytes = integerFlag('--output-limit', flags.outputLimit);
  const spec: CellSpecInput = {
    // One word is a shell command line (so `-- 'make && make test'` works); several are an argv.
    cmd: command.length === 1 ? command[0]! : command,
    env,
    limits,
    capture_diff: flags.diff,
  };
  if (flags.image !== undefined) spec.image = flags.image;
  if (flags.worktree !== undefined) spec.worktree = isAbsolute(flags.worktree) ? flags.worktree : resolve(cwd, flags.worktree);
  if (flags.timeout !== undefined) {
    const t = numberFlag('--timeout', flags.timeout);
    if (t <= 0) throw new InputError(`--timeout ${flags.timeout}: must be a positive number of seconds`);
    spec.timeout_s = t;
  }
  if (flags.allowNet !== undefined) {
    const hosts = netRuleList([flags.allowNet]).filter(Boolean);
    if (hosts.length === 0) throw new InputError('--allow-net: give at least one host name, e.g. --allow-net registry.example.com');
    spec.allow_net = checkedNetRules('--allow-net', hosts);
  }
  if (flags.denyNet !== undefined) spec.deny_net = checkedNetRules('--deny-net', netRuleList([flags.denyNet]));
  return spec;
}

function numberFlag(name: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n)) throw new InputError(`${name} ${raw}: expected a number`);
  return n;
}

function integerFlag(name: string, raw: string): number {
  const n = numberFlag(name, raw);
  if (!Number.isInteger(n)) throw new InputError(`${name} ${raw}: expected a whole number`);
  return n;
}
