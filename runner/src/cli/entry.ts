// dist/runner.js. Each command loads only what it uses: `--version` answers from here,
// `serve --stdio` (what the extension spawns on every start) skips the CLI's command tree and
// loads the rest of the runner while it answers the handshake, and main.ts loads one command's
// module (runner/src/cli/main.ts: COMMANDS).
import { createRequire } from 'node:module';
import { closeInheritedDescriptors } from '../hostguard/inheritedDescriptors.js';
import { nativeAbiProblem } from '../store/nativeBinding.js';
import { enableCompileCache } from './compileCache.js';
import { RUNNER_VERSION } from './version.js';

const argv = process.argv.slice(2);
if (argv[0] === '--version' || argv[0] === '-V') {
  // What commander prints for the program's version option, whatever follows it.
  process.stdout.write(`${RUNNER_VERSION}\n`);
} else if (nativeAbiProblem()) {
  // A packaged runner on a Node it has no SQLite build for: one line, before anything starts.
  process.stderr.write(`${nativeAbiProblem()}\n`);
  process.exitCode = 1;
} else {
  // Before anything starts a child: no descriptor the runner inherited reaches a cell.
  closeInheritedDescriptors();
  enableCompileCache();
  if (argv.length === 2 && argv[0] === 'serve' && argv[1] === '--stdio') {
    const { serveStdio } = await import('../server/serveStdio.js');
    // Handles (stdin, timers of instance drivers) would keep the process alive after the end.
    process.exit(await serveStdio());
  } else if (argv[0] === 'cell') {
    // A CommonJS bundle of its own (runner/src/cli/cellMain.ts, scripts/build.mjs): one-shot
    // cells start fastest that way. The path is the built layout's: entry.ts runs only bundled.
    const { cellMain } = createRequire(import.meta.url)('./runner-chunks/cell-main.cjs') as typeof import('./cellMain.js');
    process.exitCode = await cellMain(argv);
  } else {
    const { main } = await import('./main.js');
    process.exitCode = await main(argv);
  }
}
