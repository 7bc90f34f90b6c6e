import { createMessageConnection, ErrorCodes, ResponseError, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { celldSettingsFromEnv } from '../instances/celld/celldSettings.js';
import { PROTOCOL_VERSION } from '../protocol/protocolVersion.js';

declare const FORGE_VERSION: string | undefined;

/**
 * `forge-runner serve --stdio`: JSON-RPC 2.0 over stdin/stdout. The handshake (runner/hello)
 * is answered at once, while the store, the instance coordinator and the providers load in
 * the background; requests that arrive meanwhile wait for them, none is refused. A load
 * failure (e.g. the SQLite module built for another Node) ends the process with one line on
 * stderr, which the extension shows. Resolves with the exit code when stdin closes or on
 * SIGTERM/SIGINT, after cancelling the runs in progress.
 */
export async function serveStdio(): Promise<number> {
  const version = typeof FORGE_VERSION === 'string' ? FORGE_VERSION : 'dev';
  const log = (line: string) => process.stderr.write(`forge-runner serve: ${line}\n`);
  const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
  const server = (async () => {
    const [{ attachRpcServer }, { openInstances }] = await Promise.all([import('./rpcServer.js'), import('../instances/openInstances.js')]);
    return attachRpcServer({ connection, coordinator: openInstances(), stateDir: runnerStateDir(), version, log });
  })();
  server.catch((e: Error) => {
    process.stderr.write(`forge-runner: cannot serve: ${e.message.split('\n')[0]}\n`);
    process.exit(1);
  });
  connection.onRequest('runner/hello', () => {
    try {
      return { version, protocol_version: PROTOCOL_VERSION, coordinator: celldSettingsFromEnv(process.env) ? 'celld' : 'embedded' };
    } catch (e) {
      return new ResponseError(ErrorCodes.InternalError, (e as Error).message);
    }
  });
  connection.onRequest(async (method: string, params: unknown) => (await server).dispatch(method, params));
  connection.onError(([error]: [Error, unknown, unknown]) => log(`protocol error: ${error.message}`));
  const closed = new Promise<void>((resolve) => connection.onClose(() => resolve()));
  const stop = new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  connection.listen();
  await Promise.race([closed, stop]);
  // Runs in progress are cancelled (cells killed, runs left cancelled and resumable).
  await (await server).close();
  return 0;
}
