import { Command, CommanderError } from 'commander';
import { InputError } from '../protocol/inputError.js';
import { EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK } from './exitCodes.js';
import { printable } from './formatCellResult.js';
import { RUNNER_VERSION } from './version.js';

/** Adds one top-level command (and its subcommands) to the program. */
export type Register = (program: Command) => void;

/** The program with `registrations` (its commands) and the global options; throws commander's errors. */
export function buildProgram(registrations: readonly Register[]): Command {
  const program = new Command('forge-runner')
    .description('Forge Cells headless runner: runs commands in ephemeral isolated cells.')
    .version(RUNNER_VERSION)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  for (const register of registrations) register(program);
  return program;
}

/** Parses and runs `argv` with `registrations`; the exit status, errors printed as one line. */
export async function runProgram(argv: string[], registrations: readonly Register[]): Promise<number> {
  try {
    await buildProgram(registrations).parseAsync(argv, { from: 'user' });
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
