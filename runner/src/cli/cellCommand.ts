import { type Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { collectHealth, createProvider, providerNames } from '../cells/providerRegistry.js';
import type { CellProvider } from '../cells/provider.js';
import type { CellResult } from '../protocol/cellResult.js';
import type { CellSpecInput } from '../protocol/cellSpec.js';
import { InputError } from '../protocol/inputError.js';
import { EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK } from './exitCodes.js';
import { formatCellResult, formatHealth, printable, withheldLine } from './formatCellResult.js';
import { cellSpecFromFlags, type CellRunFlags } from './parseCellRunArgs.js';

/** `cell run` (under `cell`); loaded only when that command runs or help lists every command. */
export function registerCellCommand(program: Command): void {
  const cell = program.command('cell').description('run and inspect cells');
  cell
    .command('run')
    .description(
      'Run one command in a fresh cell and print its result: exit code, bounded output, the diff of the worktree, and what isolation was enforced.\n' +
        'One word after -- is a shell command line (/bin/sh -c); several words are an argv run without a shell.\n' +
        'Exit status: 0 when the cell ran (whatever the command returned), 2 for bad input, 1 for an internal failure or a worktree withheld after the cell.',
    )
    .addOption(new Option('--provider <name>', 'cell provider').choices(providerNames()).default('host'))
    .option('--image <image>', 'image for docker/qemu/swarm cells, e.g. one made by forge-runner bake (host takes none)')
    .option('--worktree <dir>', 'git worktree mounted read-write (default: a private empty directory)')
    .option('--timeout <seconds>', 'wall-clock budget; the whole process tree is killed after it (default 300)')
    .option(
      '--allow-net <hosts>',
      'comma-separated HOST or HOST:PORT entries the cell may reach through the egress proxy (*.example.com for subdomains, [IPv6] in brackets; no port: every port) (default: no network)',
    )
    .option(
      '--deny-net <hosts>',
      'comma-separated HOST or HOST:PORT entries the cell may never reach, even when --allow-net names them (checked first)',
    )
    .option(
      '--env <NAME=VALUE>',
      'add a variable to the scrubbed environment (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--memory <mib>', 'memory limit in MiB (default 2048)')
    .option('--pids <n>', 'process/thread limit (default 512)')
    .option('--cpus <n>', 'CPU quota in cores (default: none)')
    .option('--output-limit <bytes>', 'kill the cell after it prints this many bytes (default 268435456; 0 = never)')
    .option('--no-diff', 'do not capture a git diff (the worktree need not be a git repository)')
    .option('--docker-host <url>', 'swarm: the manager (unix:///path, tcp://host:port, ssh://user@host; default $DOCKER_HOST)')
    .option('--registry <host:port>', 'swarm: the registry the nodes pull cell images from (default $FORGE_SWARM_REGISTRY)')
    .option('--json', 'print the CellResult as JSON')
    .argument('<command...>', 'the command, after --')
    .action(async (command: string[], flags: CellRunFlags & SwarmFlags & { json?: boolean }) => {
      const spec = cellSpecFromFlags(flags, command, process.cwd());
      const provider = createProvider(flags.provider, { prewarm: 0, ...swarmOptions(flags) });
      await runCancellable(provider, spec, (result, interrupted) => {
        if (flags.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
        else process.stdout.write(formatCellResult(result));
        for (const w of result.isolation.warnings) process.stderr.write(`forge-runner: warning: ${printable(w)}\n`);
        process.exitCode = interrupted ? EXIT_INTERRUPTED : reportWithheld(result, spec.worktree) ? EXIT_INTERNAL : EXIT_OK;
      });
    });
}

export function registerHealthCommand(program: Command): void {
  program
    .command('health')
    .description('Show each cell provider: available or not, why, and what isolation it enforces on this machine.')
    .option('--docker-host <url>', 'swarm: the manager (unix:///path, tcp://host:port, ssh://user@host; default $DOCKER_HOST)')
    .option('--registry <host:port>', 'swarm: the registry the nodes pull cell images from (default $FORGE_SWARM_REGISTRY)')
    .option('--json', 'print the health report as JSON')
    .action(async (flags: SwarmFlags & { json?: boolean }) => {
      const report = await collectHealth(swarmOptions(flags));
      process.stdout.write(flags.json ? JSON.stringify(report, null, 2) + '\n' : formatHealth(report));
    });
}

export function registerSpecRunCommand(program: Command): void {
  program
    .command('spec-run')
    .description('Run one cell from a CellSpec JSON file (schemas/cell-spec.schema.json) and print the CellResult as JSON.')
    .addOption(new Option('--provider <name>', 'cell provider').choices(providerNames()).default('host'))
    .option('--docker-host <url>', 'swarm: the manager (unix:///path, tcp://host:port, ssh://user@host; default $DOCKER_HOST)')
    .option('--registry <host:port>', 'swarm: the registry the nodes pull cell images from (default $FORGE_SWARM_REGISTRY)')
    .argument('<file>', 'CellSpec JSON file, or - for standard input')
    .action(async (file: string, flags: SwarmFlags & { provider: string }) => {
      let raw: unknown;
      try {
        raw = JSON.parse(file === '-' ? await readStdin(MAX_SPEC_BYTES) : readFileSync(file, 'utf8'));
      } catch (e) {
        throw new InputError(`cannot read a CellSpec from ${file}: ${(e as Error).message.split('\n')[0]}`);
      }
      const provider = createProvider(flags.provider, { prewarm: 0, ...swarmOptions(flags) });
      await runCancellable(provider, raw as CellSpecInput, (result, interrupted) => {
        process.stdout.write(JSON.stringify(result, null, 2) + '\n');
        const worktree = (raw as { worktree?: unknown }).worktree;
        process.exitCode = interrupted
          ? EXIT_INTERRUPTED
          : reportWithheld(result, typeof worktree === 'string' ? worktree : null)
            ? EXIT_INTERNAL
            : EXIT_OK;
      });
    });
}

const MAX_SPEC_BYTES = 16 * 1024 * 1024;

/** A withheld worktree fails the command: one line on stderr with the way out; true when it was. */
function reportWithheld(result: CellResult, worktree: string | null | undefined): boolean {
  if (!result.worktree_withheld) return false;
  process.stderr.write(`forge-runner: ${printable(withheldLine(result.worktree_withheld, worktree ?? 'the worktree'))}\n`);
  return true;
}

export interface SwarmFlags {
  dockerHost?: string;
  registry?: string;
}

/** The swarm provider's two flags as provider options (absent ones fall back to the environment). */
export function swarmOptions(flags: SwarmFlags): { dockerHost?: string; registry?: string } {
  return { ...(flags.dockerHost ? { dockerHost: flags.dockerHost } : {}), ...(flags.registry ? { registry: flags.registry } : {}) };
}

/**
 * One cell that SIGINT/SIGTERM cancel like its timeout would: the provider kills and removes
 * the cell (a container, a VM) and the result still comes back, instead of the runner dying
 * with the cell left running.
 */
async function runCancellable(
  provider: CellProvider,
  spec: CellSpecInput,
  report: (result: CellResult, interrupted: boolean) => void,
): Promise<void> {
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    report(await provider.run(spec, { signal: abort.signal }), abort.signal.aborted);
  } finally {
    await provider.drain();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Standard input to its end, whatever kind of descriptor it is: a slow or non-blocking pipe
 * (where a synchronous read fails with EAGAIN), a file, a terminal.
 */
async function readStdin(maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of process.stdin) {
    total += (chunk as Buffer).length;
    if (total > maxBytes) throw new Error(`more than ${maxBytes} bytes on standard input`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
