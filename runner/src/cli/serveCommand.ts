import type { Command } from 'commander';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { InputError } from '../protocol/inputError.js';
import { openInstances } from '../instances/openInstances.js';
import { startRpcServer } from '../server/rpcServer.js';

declare const FORGE_VERSION: string | undefined;

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'Serve the runner over JSON-RPC 2.0 (vscode-jsonrpc framing: Content-Length headers) on stdin/stdout, for the VS Code extension. ' +
        'Methods and notifications: schemas/rpc-fix.schema.json and schemas/rpc-instances.schema.json. Logs go to stderr. Ends when stdin closes.',
    )
    .option('--stdio', 'use stdin/stdout (the only transport)')
    .action(async (flags: { stdio?: boolean }) => {
      if (!flags.stdio) throw new InputError('serve needs --stdio (the only transport)');
      const coordinator = openInstances();
      const { close, closed } = startRpcServer({
        input: process.stdin,
        output: process.stdout,
        coordinator,
        stateDir: runnerStateDir(),
        version: typeof FORGE_VERSION === 'string' ? FORGE_VERSION : 'dev',
        log: (line) => process.stderr.write(`forge-runner serve: ${line}\n`),
      });
      // The extension stops the runner with SIGTERM: runs in progress are cancelled (their
      // cells killed, the runs left interrupted and resumable) before the process ends.
      const stop = new Promise<void>((resolve) => {
        process.once('SIGTERM', () => resolve());
        process.once('SIGINT', () => resolve());
      });
      await Promise.race([closed, stop]);
      await close();
      process.exit(0);
    });
}
