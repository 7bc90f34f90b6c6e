import { ErrorCodes, type MessageConnection, ResponseError } from 'vscode-jsonrpc/node';
import { z } from 'zod';
import { collectHealth } from '../cells/providerRegistry.js';
import { collectGarbage } from '../cells/garbageCollection.js';
import { describeZodError, InputError } from '../protocol/inputError.js';
import { PROTOCOL_VERSION } from '../protocol/instanceCell.js';
import { REQUEST_MODEL_REPLY, RPC_FIX_METHODS, type RpcFixMethod } from '../protocol/rpcFix.js';
import { NOTIFICATION_INSTANCE_CHANGED, RPC_INSTANCE_METHODS, type RpcInstanceMethod } from '../protocol/rpcInstances.js';
import { instanceHistory, instanceStatus, listInstances } from '../instances/instanceQueries.js';
import type { InstanceCoordinator } from '../instances/instanceCoordinator.js';
import { FixService } from './fixService.js';
import { discardOld, listOldRuns } from './oldRunsService.js';
import { InstanceService } from './instanceService.js';
import { cellSnapshot, runSummary } from './runSnapshots.js';
import { processAlive } from '../workspace/staleWorktrees.js';
import { stashTrackedChanges } from '../workspace/stashChanges.js';
import { checkRepository } from '../repair/fix/checkRepository.js';
import { confirmRepositoryFiles } from '../repair/trust/repositoryTrust.js';
import { locateRepository } from '../workspace/attemptWorktree.js';
import { storedVerdict } from '../repair/verdicts/storedVerdict.js';
import { sharedVerdictSource } from '../repair/fix/verdictReuse.js';

// core types: the table mixes zod's chainable and functional (zod/mini) schemas.
type MethodTable = Record<string, { params: z.core.$ZodType; result: z.core.$ZodType }>;
type Handlers<T extends MethodTable> = { [M in keyof T]: (params: z.output<T[M]['params']>) => Promise<z.input<T[M]['result']>> };

export interface RpcServerOptions {
  connection: MessageConnection;
  coordinator: InstanceCoordinator;
  stateDir: string;
  version: string;
  log: (line: string) => void;
}

export interface RpcServer {
  /** Answers one request: params parsed with the method's zod schema first. */
  dispatch: (method: string, params: unknown) => Promise<unknown>;
  close: () => Promise<void>;
}

/**
 * The runner's JSON-RPC methods over an open connection (serveStdio owns the transport and
 * the handshake). Every request's params are parsed with its zod schema; bad input is
 * answered InvalidParams with one line and nothing happens; a handler failure is answered
 * InternalError; neither ends the server.
 */
export function attachRpcServer(o: RpcServerOptions): RpcServer {
  const connection = o.connection;
  const c = o.coordinator;
  const notify = (method: string, params: unknown) => void connection.sendNotification(method, params).catch(() => undefined);
  const instances = new InstanceService(
    c,
    (instance_id, state) => notify(NOTIFICATION_INSTANCE_CHANGED, { instance_id, state }),
    (id, e) => o.log(`instance ${id}: ${e.message}`),
  );
  const fixes = new FixService(o.stateDir, {
    notify,
    askClientModel: (request) => connection.sendRequest(REQUEST_MODEL_REPLY, request),
    log: o.log,
  });

  const instanceHandlers: Handlers<typeof RPC_INSTANCE_METHODS> = {
    'runner/hello': async () => ({ version: o.version, protocol_version: PROTOCOL_VERSION, coordinator: c.cells.kind }),
    'instances/list': async () => listInstances(c),
    'instances/status': async ({ instance_id }) => {
      const { cell, observation, open_operations } = await instanceStatus(c, instance_id);
      return { instance_id, cell, observation, open_operations };
    },
    'instances/history': async ({ instance_id, limit }) => instanceHistory(c, instance_id, limit),
    'instances/command': async ({ request }) => {
      const reply = await c.submit(request);
      if (reply.status !== 'rejected') instances.kick(request.instance_id);
      return reply;
    },
    'instances/reconcile': async ({ instance_id }) => {
      const r = await c.reconcile(instance_id, { timeoutMs: 60_000 });
      instances.kick(instance_id);
      return { classes: r.plan.classes, actions: r.plan.actions, state: r.state.state, settled: r.settled };
    },
    'ledger/show': async ({ operation_id }) => {
      const row = c.management.store.operation(operation_id);
      return {
        operation: row ? { ...row, request: JSON.parse(row.request_json) } : null,
        evidence: c.management.store.evidence({ operationId: operation_id }).map(({ seq: _seq, ...e }) => e),
      };
    },
  };

  const fixHandlers: Handlers<typeof RPC_FIX_METHODS> = {
    'fix/check': async ({ repo, test_cmd }) => checkRepository(repo, test_cmd, fixes.store),
    'repo/trust': async ({ repo, files }) => ({
      confirmed: confirmRepositoryFiles((await locateRepository(repo)).top, fixes.store, files),
    }),
    'repo/stash': async ({ repo }) => stashTrackedChanges(repo),
    'fix/start': async (p) => fixes.start(p),
    'fix/cancel': async ({ run_id }) => ({ cancelled: fixes.cancel(run_id) }),
    'fix/resume': async ({ run_id }) => fixes.resume(run_id),
    'runs/list': async ({ limit }) => fixes.store.listRuns(limit).map((r) => runSummary(r, processAlive)),
    'runs/show': async ({ run_id }) => {
      const snap = fixes.snapshot(run_id);
      if (!snap) throw new InputError(`no run ${run_id}; see runs/list`);
      return snap;
    },
    'attempts/details': async ({ run_id, index }) => {
      const snap = fixes.snapshot(run_id);
      const attempt = snap?.attempts.find((a) => a.index === index);
      if (!snap || !attempt) throw new InputError(`no attempt ${index} in run ${run_id}; see runs/show`);
      const row = fixes.store.attempts(run_id).find((a) => a.idx === index)!;
      const turns = fixes.store.turns(run_id, index).map((t) => {
        const response = JSON.parse(t.response_json) as { content?: string | null };
        const results = JSON.parse(t.tool_results_json) as { tool: string; arguments: unknown; result: string }[];
        return {
          turn: t.turn_idx,
          content: response.content ?? null,
          tokens: t.tokens,
          input_tokens: t.input_tokens,
          output_tokens: t.output_tokens,
          tool_calls: results.map((r) => ({ tool: r.tool, arguments: r.arguments, result: r.result })),
        };
      });
      const verdict = row.verdict_json ? storedVerdict(row.verdict_json) : null;
      // A verdict taken from another attempt with the same change: that attempt's verdict cells are its logs.
      const source = sharedVerdictSource(verdict?.reused_from ?? null);
      return {
        run: snap.run,
        ranking: snap.ranking,
        attempt,
        verdict,
        generated: generatedOf(fixes.store.getRun(run_id)?.report_json ?? null, index),
        turns,
        cells: snap.cells.filter(
          (cell) =>
            cell.attempt_index === index || (source !== null && cell.attempt_index === source && cell.purpose.startsWith('verdict')),
        ),
      };
    },
    'cells/log': async ({ run_id, cell_id }) => {
      const row = fixes.store.cell(run_id, cell_id);
      if (!row) {
        const live = fixes.runningCells().find((r) => r.cell_id === cell_id && r.run_id === run_id);
        if (live) return { cell: live, log: '(the cell is still running; its bounded log arrives when it returns)' };
        throw new InputError(`no cell ${cell_id} in run ${run_id}; see runs/show`);
      }
      return { cell: cellSnapshot(row), log: row.log ?? '(no log was recorded for this cell: it ran before the runner kept logs)' };
    },
    'cells/health': async () => collectHealth(),
    'cells/gc': async ({ repo }) => {
      const { items, notes } = await collectGarbage(repo, false);
      return { items: items.map((i) => ({ kind: i.kind, id: i.id, action: i.action, reason: i.reason })), notes };
    },
    'review/files': async ({ run_id, attempt }) => fixes.reviewFiles(run_id, attempt),
    'review/content': async ({ run_id, path, side, attempt }) => fixes.reviewContent(run_id, path, side, attempt),
    'review/hunks': async ({ run_id, attempt }) => fixes.reviewHunks(run_id, attempt),
    'review/apply': async ({ run_id, attempt, selection, merge, conflicts }) => fixes.apply(run_id, attempt, selection, merge, conflicts),
    'review/undoApply': async ({ run_id, undo_id }) => fixes.undoApply(run_id, undo_id),
    'review/discard': async ({ run_id }) => fixes.discard(run_id),
    'runs/old': async ({ older_than_s }) => listOldRuns(fixes, older_than_s),
    'runs/discardOld': async ({ run_ids, older_than_s }) => discardOld(fixes, run_ids, older_than_s),
  };

  const routes = new Map<string, (raw: unknown) => Promise<unknown>>();
  register(routes, RPC_INSTANCE_METHODS, instanceHandlers, o.log);
  register(routes, RPC_FIX_METHODS, fixHandlers, o.log);
  void instances.resumeAll().catch((e: Error) => o.log(`resuming instances failed: ${e.message}`));
  return {
    dispatch: async (method, params) => {
      const route = routes.get(method);
      return route
        ? route(params)
        : new ResponseError(
            ErrorCodes.MethodNotFound,
            `unknown method ${method}; see schemas/rpc-fix.schema.json and schemas/rpc-instances.schema.json`,
          );
    },
    close: async () => {
      await fixes.close();
      await instances.close();
    },
  };
}

function register<T extends MethodTable>(
  routes: Map<string, (raw: unknown) => Promise<unknown>>,
  table: T,
  handlers: Handlers<T>,
  log: (line: string) => void,
): void {
  for (const method of Object.keys(table) as (keyof T & string)[]) {
    const schema = table[method]!.params;
    routes.set(method, async (raw: unknown) => {
      const parsed = z.safeParse(schema, raw ?? {});
      if (!parsed.success) return new ResponseError(ErrorCodes.InvalidParams, describeZodError(`${method} params`, parsed.error));
      try {
        return await handlers[method](parsed.data as never);
      } catch (e) {
        if (e instanceof InputError) return new ResponseError(ErrorCodes.InvalidParams, e.message);
        log(`${method} failed: ${(e as Error).stack ?? e}`);
        return new ResponseError(ErrorCodes.InternalError, `${method} failed: ${(e as Error).message.split('\n')[0]}`);
      }
    });
  }
}

export type { RpcFixMethod, RpcInstanceMethod };

/** What the run's report says attempt `index` left out of its patch as a tool's cache (none before the run ended). */
function generatedOf(reportJson: string | null, index: number): string[] {
  try {
    const report = JSON.parse(reportJson ?? 'null') as { attempts?: { index?: unknown; generated?: unknown }[] } | null;
    const generated = report?.attempts?.find((a) => a.index === index)?.generated;
    return Array.isArray(generated) ? generated.filter((g): g is string => typeof g === 'string') : [];
  } catch {
    return [];
  }
}
