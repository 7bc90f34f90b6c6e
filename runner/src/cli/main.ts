import { type Register, runProgram } from './program.js';

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
  ['trust', async () => [(await import('./trustCommand.js')).registerTrustCommand]],
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

export async function main(argv: string[]): Promise<number> {
  return runProgram(argv, await registrationsFor(argv));
}
