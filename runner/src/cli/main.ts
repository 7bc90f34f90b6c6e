import { Command, CommanderError } from 'commander';
import { InputError } from '../protocol/inputError.js';
import { EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK } from './exitCodes.js';
import { printable } from './formatCellResult.js';
import { RUNNER_VERSION } from './version.js';

type Register = (program: Command) => void;

/**
 * Every top-level command, in help order, with the module that defines it. A command's module
 * (and what it imports: providers, dockerode, the store, the repair pipeline) is loaded only
 * when that command runs; help and unknown commands load them all. Each entry is a separate
 * dynamic import so the bundle puts each command behind its own chunk.
 */
const COMMANDS: ReadonlyArray<readonly [name: string, load: () => Promise<Register[]>]> = [
  ['cell', async () => [(await import('./cellCommand.js')).registerCellCommand]],
  ['health', async () => [(await import('./cellCommand.js')).registerHealthCommand]],
  ['bake', async () => [(await import('./bakeCommand.js')).registerBakeCommand]],
  ['gc', async () => [(await import('./gcCommand.js')).registerGcCommand]],
  ['fix', async () => [(await import('./fixCommand.js')).registerFixCommand]],
  ['runs', async () => [(await import('./runsCommand.js')).registerRunsCommand]],
  ['demo', async () => [(await import('./demoCommand.js')).registerDemoCommand]],
  // `instance` and `ledger` come from one registration.
  ['instance', async () => [(await import('./instanceCommand.js')).registerInstanceCommands]],
  ['ledger', async () => [(await import('./instanceCommand.js')).registerInstanceCommands]],
  ['qualify', async () => [(await import('./qualifyCommand.js')).registerQualifyCommand]],
  ['serve', async () => [(await import('./serveCommand.js')).registerServeCommand]],
  ['spec-run', async () => [(await import('./cellCommand.js')).registerSpecRunCommand]],
];

/** The registrations `argv` needs: its command's alone, or all of them (help, unknown command). */
async function registrationsFor(argv: readonly string[]): Promise<Register[]> {
  const only = COMMANDS.find(([name]) => name === argv[0]);
  if (only) return only[1]();
  const all = await Promise.all(COMMANDS.map(([, load]) => load()));
  // instance and ledger share one registration: register it once, in its place.
  return [...new Set(all.flat())];
}

async function buildProgram(argv: readonly string[]): Promise<Command> {
  const program = new Command('forge-runner')
    .description('Forge Cells headless runner: runs commands in ephemeral isolated cells.')
    .version(RUNNER_VERSION)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  for (const register of await registrationsFor(argv)) register(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await (await buildProgram(argv)).parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT_OK;
      return EXIT_BAD_INPUT;
    }
    if (e instanceof InputError) {
      process.stderr.write(`forge-runner: ${printable(e.message)}\n`);
      return EXIT_BAD_INPUT;
    }
    if (e instanceof Error && ['CelldCompatibilityError', 'CelldUnavailableError', 'SwarmUnavailableError'].includes(e.name)) {
      // A peer problem, not a bug here: one line that says what to do.
      process.stderr.write(`forge-runner: ${e.message}\n`);
      return EXIT_INTERNAL;
    }
    process.stderr.write(`forge-runner: internal error: ${printable((e as Error).stack ?? String(e))}\n`);
    return EXIT_INTERNAL;
  }
}
