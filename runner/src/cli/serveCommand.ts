import type { Command } from 'commander';
import { InputError } from '../protocol/inputError.js';
import { serveStdio } from '../server/serveStdio.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'Serve the runner over JSON-RPC 2.0 (vscode-jsonrpc framing: Content-Length headers) on stdin/stdout, for the VS Code extension. ' +
        'Methods and notifications: schemas/rpc-fix.schema.json and schemas/rpc-instances.schema.json. Logs go to stderr. ' +
        'Ends when stdin closes or on SIGTERM, cancelling runs in progress (they stay resumable).',
    )
    .option('--stdio', 'use stdin/stdout (the only transport)')
    .action(async (flags: { stdio?: boolean }) => {
      if (!flags.stdio) throw new InputError('serve needs --stdio (the only transport)');
      process.exit(await serveStdio());
    });
}
