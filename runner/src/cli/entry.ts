// dist/runner.js. `serve --stdio` is what the extension spawns on every start: it skips the
// CLI's command tree and loads the rest of the runner while it answers the handshake.
import { closeInheritedDescriptors } from '../cells/inheritedDescriptors.js';

// Before anything starts a child: no descriptor the runner inherited reaches a cell.
closeInheritedDescriptors();
const argv = process.argv.slice(2);
if (argv.length === 2 && argv[0] === 'serve' && argv[1] === '--stdio') {
  const { serveStdio } = await import('../server/serveStdio.js');
  // Handles (stdin, timers of instance drivers) would keep the process alive after the end.
  process.exit(await serveStdio());
} else {
  const { main } = await import('./main.js');
  process.exitCode = await main(argv);
}
