import type { Command } from 'commander';
import { InputError } from '../protocol/inputError.js';
import { openInstances } from '../instances/openInstances.js';
import { startRpcServer } from '../server/rpcServer.js';

declare const FORGE_VERSION: string | undefined;

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'Serve the runner over JSON-RPC 2.0 (vscode-jsonrpc framing: Content-Length headers) on stdin/stdout, for the VS Code extension. ' +
        'Methods and notifications: schemas/rpc-instances.schema.json. Logs go to stderr. Ends when stdin closes.',
    )
    .option('--stdio', 'use stdin/stdout (the only transport)')
    .action(async (flags: { stdio?: boolean }) => {
      if (!flags.stdio) throw new InputError('serve needs --stdio (the only transport)');
      const coordinator = openInstances();
      const { service, closed } = startRpcServer({
        input: process.stdin,
        output: process.stdout,
        coordinator,
        version: typeof FORGE_VERSION === 'string' ? FORGE_VERSION : 'dev',
        log: (line) => process.stderr.write(`forge-runner serve: ${line}\n`),
      });
      await closed;
      await service.close();
    });
}
