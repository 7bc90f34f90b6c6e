import { RPC_FIX_METHODS } from '../../../runner/src/protocol/rpcFix.js';
import { RPC_INSTANCE_METHODS } from '../../../runner/src/protocol/rpcInstances.js';

/**
 * What the runner client needs only once it starts: the methods' zod schemas and the
 * JSON-RPC transport. Bundled apart (dist/extension-deps.cjs) and loaded after activation,
 * because zod alone is most of the extension's code.
 */
export { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
export const METHODS = { ...RPC_FIX_METHODS, ...RPC_INSTANCE_METHODS };
