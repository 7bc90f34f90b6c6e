// The `cell` command as a bundle of its own (dist/runner-chunks/cell-main.js, scripts/build.mjs):
// a one-shot `cell run` is the command whose start time a user feels on every call, and a
// bundle that shares no chunk with the rest of the runner holds only the code it reaches
// (zod/mini's used parts, not all of zod's core).
import { registerCellCommand } from './cellCommand.js';
import { runProgram } from './program.js';

export const cellMain = (argv: string[]): Promise<number> => runProgram(argv, [registerCellCommand]);
