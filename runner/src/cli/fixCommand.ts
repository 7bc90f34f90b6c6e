import type { Command } from 'commander';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { createProvider } from '../cells/providerRegistry.js';
import { swarmOptions } from './cellCommand.js';
import { FIX_LIMITS, type FixRequest, type FixRequestInput, FixRequestSchema } from '../protocol/fixRequest.js';
import { InputError } from '../protocol/inputError.js';
import { checkedNetRules, netRuleList } from './netRuleFlags.js';
import { createModel } from '../repair/models/createModel.js';
import { BrokenEnvironmentError, resumeRequest, runFix } from '../repair/runFix.js';
import { openStore } from '../store/openStore.js';
import { RunStore } from '../store/runStore.js';
import { EXIT_BAD_INPUT } from './exitCodes.js';
import { printable } from './formatCellResult.js';
import { prewarmFor, resolveRun } from '../repair/fix/resolveRun.js';
import { isValidBranchName } from '../workspace/safeGit.js';
import { formatUsageTable } from './formatUsageTable.js';
import { priceFromFlag } from './priceFlag.js';

/** `fix` exit codes differ from the cell commands: 1 means "not fixed", so internal is 3. */
export const FIX_EXIT = { fixed: 0, notFixed: 1, badInput: 2, internal: 3 } as const;

interface FixFlags {
  repo: string;
  issueFile?: string;
  issueText?: string;
  testCmd?: string;
  installCmd?: string;
  /** commander: false from --no-reuse-verdicts. */
  reuseVerdicts?: boolean;
  /** commander: false from --no-failing-first. */
  failingFirst?: boolean;
  /** commander: false from --no-warm-caches. */
  warmCaches?: boolean;
  /** commander: false from --no-early-ground-truth. */
  earlyGroundTruth?: boolean;
  /** commander: false from --no-shared-deps. */
  sharedDeps?: boolean;
  allowNet?: string[];
  denyNet?: string[];
  include?: string[];
  share?: string[];
  attempts: string;
  temperature: string;
  provider?: string;
  image?: string;
  dockerHost?: string;
  registry?: string;
  model?: string;
  /** Budgets: undefined when not given (a new run takes the default, a resumed one its own). */
  maxTurns?: string;
  maxTokens?: string;
  maxRunTokens?: string;
  price?: string;
  timeoutPerAttempt?: string;
  cellTimeout?: string;
  out?: string;
  apply?: boolean;
  branch?: string;
  resume?: string;
  allowDirty?: boolean;
  allowGreenBaseline?: boolean;
  strict?: boolean;
  json?: boolean;
}

export function registerFixCommand(program: Command): void {
  program
    .command('fix')
    .description(
      'Fix an issue: run K sampled repair attempts in parallel worktrees, every command in a cell, pick the winner by real\n' +
        'test results, re-verify it on a fresh checkout, and keep it on branch forge/attempt/<id>. Your working tree, index\n' +
        'and branch change only with --apply or --branch.\nExit status: 0 fixed, 1 not fixed, 2 bad input, 3 internal error.',
    )
    .option('--repo <dir>', 'repository to fix (must be clean unless --allow-dirty)', '.')
    .option('--issue-file <file>', 'the issue text, from a file')
    .option('--issue-text <text>', 'the issue text')
    .option('--test-cmd <cmd>', 'test command (default: detected from the stack)')
    .option(
      '--allow-net <host>',
      'let every cell of the run reach this host through the egress proxy (repeatable; HOST or HOST:PORT, e.g. registry.example.com or registry.example.com:443 for a test hook that needs it; *.example.com for its subdomains, [IPv6] in brackets); default: no network',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      '--deny-net <hosts>',
      "never let a cell of the run reach these (HOST or HOST:PORT, comma-separated, repeatable), even when --allow-net or the install step's registries name them: checked first",
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      '--no-shared-deps',
      'don\'t share the checkout\'s installed dependencies (node_modules, .venv, the Go module cache...) with the cells; see README "Dependencies"',
    )
    .option(
      '--no-reuse-verdicts',
      'test every attempt in a verdict cell of its own, even when its last run_tests already ran on the same tree or another attempt made the same change (slower; how runs were judged before)',
    )
    .option(
      '--no-failing-first',
      "run every attempt's verdict on the whole suite at once, without first running only the baseline's failing tests (slower for attempts that fix none of them; how runs were judged before)",
    )
    .option(
      '--no-warm-caches',
      "don't give the cells after the baseline what the baseline cell compiled (Go's build cache, read-only with a private layer each): every cell compiles afresh, as before",
    )
    .option(
      '--no-early-ground-truth',
      "start the winner's ground truth only after selection, not on an idle core as soon as an attempt runs its tests on that change (slower when the winner finishes last; as before)",
    )
    .option(
      '--include <glob>',
      "copy the checkout's untracked files matching this glob into every attempt (repeatable; e.g. config/local.json). The repository's own .forgeinclude counts only once you confirm it (forge-runner trust)",
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      '--share <dir>',
      "share this directory read-only with every cell (repeatable; inside the repository, or an absolute path). The repository's .forge/config.json shares count only once you confirm it (forge-runner trust)",
      (v: string, all: string[] = []) => [...all, v],
    )
    .option('--install-cmd <cmd>', 'install command, run in a cell on every worktree before its tests (faster: bake it into an image)')
    .option(
      '--attempts <k>',
      `parallel repair attempts (${FIX_LIMITS.attempts.min} to ${FIX_LIMITS.attempts.max})`,
      String(FIX_LIMITS.attempts.default),
    )
    .option('--temperature <t>', 'sampling temperature of attempts 1..K-1 (attempt 0 runs at 0)', String(FIX_LIMITS.temperature.default))
    .option('--provider <name>', 'cell provider: host, docker, qemu or swarm (default: docker when a baked image is known, else host)')
    .option('--image <image>', 'image for docker and swarm cells (default: the last forge-runner bake of the repo)')
    .option('--docker-host <url>', 'swarm: the manager (unix:///path, tcp://host:port, ssh://user@host; default $DOCKER_HOST)')
    .option('--registry <host:port>', 'swarm: the registry the nodes pull cell images from (default $FORGE_SWARM_REGISTRY)')
    .option('--model <spec>', 'model: replay:FILE (default $FORGE_MODEL_SPEC)')
    // No commander defaults for budgets: a resume must tell "not given" (keep the run's) from a value.
    .option('--max-turns <n>', `model turns per attempt (default: ${FIX_LIMITS.max_turns.default})`)
    .option('--max-tokens <n>', `model tokens per attempt (default: ${FIX_LIMITS.max_tokens.default})`)
    .option('--max-run-tokens <n>', 'model tokens (input + output) for the whole run, shared by its attempts (default: none)')
    .option(
      '--price <prices>',
      'your price of the model per million tokens, input=N,output=M, or a JSON file {"MODEL": {"inputPerMTok": N, "outputPerMTok": M}}: report.json and summary.md then estimate the cost (no price list is shipped)',
    )
    .option('--timeout-per-attempt <s>', `wall-clock budget of one attempt (default: ${FIX_LIMITS.timeout_per_attempt_s.default})`)
    .option('--cell-timeout <s>', `budget of one cell, one test run (default: ${FIX_LIMITS.cell_timeout_s.default})`)
    .option('--out <dir>', 'write winner.diff, report.json and summary.md there')
    .option('--apply', 'apply the winner to your working tree (only if it applies cleanly)')
    .option('--branch <name>', 'create this branch at the winning commit')
    .option(
      '--resume <run_id>',
      'continue a cancelled run, or one whose runner was killed: finished attempts are kept, the rest redone, with the budgets, --allow-net and --deny-net entries and dependency sharing the run started with (flags given now win)',
    )
    .option('--allow-dirty', 'run even with uncommitted changes (they are not part of the attempts)')
    .option('--allow-green-baseline', 'continue even if the tests already pass on the base commit')
    .option(
      '--strict',
      "a fix must pass the whole suite (exit 0, nothing failing); by default it must make the issue's failing tests pass and break nothing else, and tests that fail before and after are named, not held against it",
    )
    .option('--json', 'print only the report (JSON) on stdout')
    .action(async (flags: FixFlags) => {
      // Ctrl-C stops the cells and leaves the run "cancelled", resumable with --resume.
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const outcome = await fixFromFlags(flags, undefined, abort.signal);
        process.stdout.write(
          flags.json
            ? JSON.stringify(outcome.report, null, 2) + '\n'
            : `${formatUsageTable(outcome.report)}${outcome.report.status === 'fixed' ? 'fixed' : 'not fixed'}: see ${flags.out ? join(flags.out, 'summary.md') : 'the report (--out DIR)'}\n`,
        );
        process.exitCode = outcome.exitCode;
      } catch (e) {
        if (e instanceof BrokenEnvironmentError && flags.json) process.stdout.write(JSON.stringify(e.report, null, 2) + '\n');
        if (e instanceof InputError) {
          process.stderr.write(`forge-runner: ${printable(e.message)}\n`);
          process.exitCode = EXIT_BAD_INPUT;
          return;
        }
        if (abort.signal.aborted) {
          process.stderr.write('forge-runner: cancelled; continue with forge-runner fix --resume RUN_ID (see forge-runner runs list)\n');
          process.exitCode = 130;
          return;
        }
        process.stderr.write(`forge-runner: internal error: ${printable((e as Error).stack ?? String(e))}\n`);
        process.exitCode = FIX_EXIT.internal;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}

const positiveInt = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new InputError(`${name} ${raw}: expected a positive whole number`);
  return n;
};

/** The flag each FixRequest field comes from, and its raw text: errors name what the user typed. */
const FLAG_OF: Partial<Record<keyof FixRequestInput, string>> = {
  attempts: '--attempts',
  temperature: '--temperature',
  max_turns: '--max-turns',
  max_tokens: '--max-tokens',
  timeout_per_attempt_s: '--timeout-per-attempt',
  cell_timeout_s: '--cell-timeout',
  test_cmd: '--test-cmd',
  install_cmd: '--install-cmd',
  image: '--image',
  model: '--model',
  issue: 'the issue text',
  branch: '--branch',
  out_dir: '--out',
  allow_net: '--allow-net',
  deny_net: '--deny-net',
  include: '--include',
  share: '--share',
};
const RAW_OF: Partial<Record<keyof FixRequestInput, keyof FixFlags>> = {
  attempts: 'attempts',
  temperature: 'temperature',
  max_turns: 'maxTurns',
  max_tokens: 'maxTokens',
  timeout_per_attempt_s: 'timeoutPerAttempt',
  cell_timeout_s: 'cellTimeout',
};

/** Flags -> a FixRequest; its schema holds the bounds and defaults. A refusal is one line naming the flag. */
function parseFixRequest(input: FixRequestInput, flags: FixFlags): FixRequest {
  const parsed = FixRequestSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path[0] as keyof FixRequestInput;
  const flag = FLAG_OF[field] ?? `--${String(field).replace(/_/g, '-')}`;
  const rawKey = RAW_OF[field];
  const limits = field in FIX_LIMITS ? FIX_LIMITS[field as keyof typeof FIX_LIMITS] : null;
  if (rawKey && limits && 'max' in limits) {
    const kind = field === 'temperature' ? 'a number' : 'a whole number';
    throw new InputError(`${flag} ${String(flags[rawKey])}: expected ${kind} from ${limits.min} to ${limits.max}`);
  }
  throw new InputError(`${flag}: ${issue.message}`);
}

export async function fixFromFlags(
  flags: FixFlags,
  progress: (l: string) => void = (l) => process.stderr.write(`forge: ${printable(l)}\n`),
  signal?: AbortSignal,
) {
  // One store for the whole command: the run is recorded, resumed and reported through it.
  const store = new RunStore(openStore(join(runnerStateDir(), 'forge.db')));
  if (flags.resume) return resumeFromFlags(flags, store, progress, signal);
  if (Boolean(flags.issueFile) === Boolean(flags.issueText))
    throw new InputError('give the issue with exactly one of --issue-file F or --issue-text T');
  let issue = flags.issueText ?? '';
  if (flags.issueFile) {
    if (!existsSync(flags.issueFile)) throw new InputError(`--issue-file ${flags.issueFile} does not exist`);
    if (!statSync(flags.issueFile).isFile())
      throw new InputError(`--issue-file ${flags.issueFile} is not a file; pass the file that holds the issue text`);
    try {
      issue = readFileSync(flags.issueFile, 'utf8');
    } catch (e) {
      throw new InputError(`--issue-file ${flags.issueFile} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (issue.trim() === '') throw new InputError('the issue text is empty');
  const modelSpec = flags.model ?? process.env.FORGE_MODEL_SPEC;
  if (!modelSpec) throw new InputError('no model: pass --model replay:FILE (or set FORGE_MODEL_SPEC)');
  const model = createModel(modelSpec);
  const repo = resolve(flags.repo);
  const attempts = positiveInt('--attempts', flags.attempts);
  const setup = await resolveRun(
    repo,
    { provider: flags.provider, image: flags.image, attempts, howToGiveImage: 'pass --image IMG or run forge-runner bake first' },
    progress,
  );
  const temperature = Number(flags.temperature);
  if (!Number.isFinite(temperature))
    throw new InputError(
      `--temperature ${flags.temperature}: expected a number from ${FIX_LIMITS.temperature.min} to ${FIX_LIMITS.temperature.max}`,
    );
  const allowNet = checkedNetRules('--allow-net', flags.allowNet ?? []);
  const denyNet = checkedNetRules('--deny-net', netRuleList(flags.denyNet ?? []));
  const request = parseFixRequest(
    {
      repo,
      issue,
      model: modelSpec,
      attempts,
      provider: setup.provider,
      ...(setup.image ? { image: setup.image } : {}),
      ...(flags.testCmd ? { test_cmd: flags.testCmd } : {}),
      ...(flags.installCmd ? { install_cmd: flags.installCmd } : {}),
      shared_deps: flags.sharedDeps !== false,
      reuse_verdicts: flags.reuseVerdicts !== false,
      failing_first: flags.failingFirst !== false,
      warm_caches: flags.warmCaches !== false,
      early_ground_truth: flags.earlyGroundTruth !== false,
      allow_net: allowNet,
      deny_net: denyNet,
      include: flags.include ?? [],
      share: flags.share ?? [],
      temperature,
      ...runSettings(flags, modelSpec),
      allow_dirty: flags.allowDirty ?? false,
      strict: flags.strict ?? false,
    },
    flags,
  );
  const provider = createProvider(setup.provider, { prewarm: setup.prewarm, ...swarmOptions(flags) });
  return runFix(request, { store, provider, model, progress, signal });
}

/** Budgets and outputs shared by a new run and a resumed one (FixRequest fields). */
function runSettings(flags: FixFlags, model: string) {
  if (flags.out) checkOutDir(resolve(flags.out));
  if (flags.branch) checkBranchName(flags.branch);
  return {
    ...(flags.maxTurns !== undefined ? { max_turns: positiveInt('--max-turns', flags.maxTurns) } : {}),
    ...(flags.maxTokens !== undefined ? { max_tokens: positiveInt('--max-tokens', flags.maxTokens) } : {}),
    ...(flags.maxRunTokens !== undefined ? { max_run_tokens: positiveInt('--max-run-tokens', flags.maxRunTokens) } : {}),
    ...(flags.price !== undefined ? { price: priceFromFlag(flags.price, model) } : {}),
    ...(flags.timeoutPerAttempt !== undefined
      ? { timeout_per_attempt_s: positiveInt('--timeout-per-attempt', flags.timeoutPerAttempt) }
      : {}),
    ...(flags.cellTimeout !== undefined ? { cell_timeout_s: positiveInt('--cell-timeout', flags.cellTimeout) } : {}),
    ...(flags.out ? { out_dir: resolve(flags.out) } : {}),
    apply: flags.apply ?? false,
    ...(flags.branch ? { branch: flags.branch } : {}),
    // Only when given: a resume keeps the run's own setting otherwise.
    ...(flags.allowGreenBaseline ? { allow_green_baseline: true } : {}),
  };
}

/** --out must be a directory that exists or can be made: said before the run, not after it. */
function checkOutDir(dir: string): void {
  if (['/proc', '/sys', '/dev'].some((p) => dir === p || dir.startsWith(`${p}/`)))
    throw new InputError(`--out ${dir} is in a kernel filesystem; pass a directory for winner.diff, report.json and summary.md`);
  let probe = dir;
  while (!existsSync(probe)) {
    const parent = dirname(probe);
    if (parent === probe) break;
    probe = parent;
  }
  if (!statSync(probe).isDirectory())
    throw new InputError(`--out ${dir}: ${probe} is not a directory; pass a directory for winner.diff, report.json and summary.md`);
  try {
    accessSync(probe, constants.W_OK);
  } catch {
    throw new InputError(`--out ${dir}: ${probe} is not writable`);
  }
}

/** --branch must be a valid new branch name (git's own rules), checked before the run. */
function checkBranchName(name: string): void {
  if (!isValidBranchName(name)) throw new InputError(`--branch ${name} is not a valid branch name (git check-ref-format); pick another`);
}

/**
 * --resume RUN_ID: what defines the run and the settings it started with come from the store
 * (resumeRequest); flags given now (budgets, --allow-net, --no-shared-deps, outputs) win.
 */
async function resumeFromFlags(flags: FixFlags, store: RunStore, progress: (l: string) => void, signal?: AbortSignal) {
  const row = store.getRun(flags.resume!);
  if (!row) throw new InputError(`no run ${flags.resume}; see forge-runner runs list`);
  const given = {
    ...runSettings(flags, row.model),
    ...(flags.allowNet ? { allow_net: checkedNetRules('--allow-net', flags.allowNet) } : {}),
    ...(flags.denyNet ? { deny_net: checkedNetRules('--deny-net', netRuleList(flags.denyNet)) } : {}),
    ...(flags.include ? { include: flags.include } : {}),
    ...(flags.share ? { share: flags.share } : {}),
    // commander gives true when --no-shared-deps is absent: only the explicit "no" is a choice.
    ...(flags.sharedDeps === false ? { shared_deps: false } : {}),
    ...(flags.reuseVerdicts === false ? { reuse_verdicts: false } : {}),
    ...(flags.failingFirst === false ? { failing_first: false } : {}),
    ...(flags.warmCaches === false ? { warm_caches: false } : {}),
    ...(flags.earlyGroundTruth === false ? { early_ground_truth: false } : {}),
    ...(flags.strict ? { strict: true } : {}),
  };
  const request = parseFixRequest(resumeRequest(row, given), flags);
  const provider = createProvider(row.provider, { prewarm: prewarmFor(row.attempts), ...swarmOptions(flags) });
  const model = createModel(row.model);
  return runFix(request, { store, provider, model, progress, signal });
}
