import { createMessageConnection, ErrorCodes, type MessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { z } from 'zod';
import { describeZodError, InputError } from '../protocol/inputError.js';
import { PROTOCOL_VERSION } from '../protocol/instanceCell.js';
import { NOTIFICATION_INSTANCE_CHANGED, RPC_INSTANCE_METHODS, type RpcInstanceMethod } from '../protocol/rpcInstances.js';
import { instanceHistory, instanceStatus, listInstances } from '../instances/instanceQueries.js';
import type { InstanceCoordinator } from '../instances/instanceCoordinator.js';
import { InstanceService } from './instanceService.js';

type Handler<M extends RpcInstanceMethod> = (params: z.output<(typeof RPC_INSTANCE_METHODS)[M]['params']>) => Promise<z.input<(typeof RPC_INSTANCE_METHODS)[M]['result']>>;

export interface RpcServerOptions {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  coordinator: InstanceCoordinator;
  version: string;
  log: (line: string) => void;
}

/**
 * JSON-RPC over stdio (vscode-jsonrpc). Every request's params are parsed with its zod
 * schema; bad input is answered InvalidParams with one line and nothing happens; a handler
 * failure is answered InternalError; neither ends the server.
 */
export function startRpcServer(o: RpcServerOptions): { connection: MessageConnection; service: InstanceService; closed: Promise<void> } {
  const connection = createMessageConnection(new StreamMessageReader(o.input), new StreamMessageWriter(o.output));
  const c = o.coordinator;
  const service = new InstanceService(
    c,
    (instance_id, state) => void connection.sendNotification(NOTIFICATION_INSTANCE_CHANGED, { instance_id, state }).catch(() => undefined),
    (id, e) => o.log(`instance ${id}: ${e.message}`),
  );

  const handlers: { [M in RpcInstanceMethod]: Handler<M> } = {
    'runner/hello': async () => ({ version: o.version, protocol_version: PROTOCOL_VERSION, coordinator: c.cells.kind }),
    'instances/list': async () => listInstances(c),
    'instances/status': async ({ instance_id }) => {
      const { cell, observation, open_operations } = await instanceStatus(c, instance_id);
      return { instance_id, cell, observation, open_operations };
    },
    'instances/history': async ({ instance_id, limit }) => instanceHistory(c, instance_id, limit),
    'instances/command': async ({ request }) => {
      const reply = await c.submit(request);
      if (reply.status !== 'rejected') service.kick(request.instance_id);
      return reply;
    },
    'instances/reconcile': async ({ instance_id }) => {
      const r = await c.reconcile(instance_id, { timeoutMs: 60_000 });
      service.kick(instance_id);
      return { classes: r.plan.classes, actions: r.plan.actions, state: r.state.state, settled: r.settled };
    },
    'ledger/show': async ({ operation_id }) => {
      const row = c.management.store.operation(operation_id);
      return { operation: row ? { ...row, request: JSON.parse(row.request_json) } : null, evidence: c.management.store.evidence({ operationId: operation_id }).map(({ seq: _seq, ...e }) => e) };
    },
  };

  for (const method of Object.keys(handlers) as RpcInstanceMethod[]) {
    const schema = RPC_INSTANCE_METHODS[method].params;
    connection.onRequest(method, async (raw: unknown) => {
      const parsed = schema.safeParse(raw ?? {});
      if (!parsed.success) return new ResponseError(ErrorCodes.InvalidParams, describeZodError(`${method} params`, parsed.error));
      try {
        return await (handlers[method] as Handler<typeof method>)(parsed.data as never);
      } catch (e) {
        if (e instanceof InputError) return new ResponseError(ErrorCodes.InvalidParams, e.message);
        o.log(`${method} failed: ${(e as Error).stack ?? e}`);
        return new ResponseError(ErrorCodes.InternalError, `${method} failed: ${(e as Error).message.split('\n')[0]}`);
      }
    });
  }
  connection.onError(([error]: [Error, unknown, unknown]) => o.log(`protocol error: ${error.message}`));
  const closed = new Promise<void>((resolve) => connection.onClose(() => resolve()));
  connection.listen();
  void service.resumeAll().catch((e: Error) => o.log(`resuming instances failed: ${e.message}`));
  return { connection, service, closed };
}
