import { z } from 'zod';
import { CommandReplySchema, EvidenceSchema, InstanceCellStateSchema, ObservationSchema, OperationRequestSchema } from './instanceCell.js';

/**
 * JSON-RPC methods of `forge-runner serve --stdio` for durable instances (the extension's
 * Instances view). Params are validated with these schemas; a bad message is answered
 * with InvalidParams and one line naming the problem, and the server carries on.
 */
const instanceId = z.string().min(1).max(255);

export const RPC_INSTANCE_METHODS = {
  'runner/hello': {
    params: z.object({}).strict(),
    result: z.object({ version: z.string(), protocol_version: z.string(), coordinator: z.enum(['embedded', 'celld']) }).strict(),
  },
  'instances/list': {
    params: z.object({}).strict(),
    result: z.array(
      z
        .object({
          instance_id: instanceId,
          provider: z.string().nullable(),
          generation: z.number().int(),
          state: z.string().nullable(),
          desired: z.string().nullable(),
          runtime_state: z.string().nullable(),
        })
        .strict(),
    ),
  },
  'instances/status': {
    params: z.object({ instance_id: instanceId }).strict(),
    result: z
      .object({
        instance_id: instanceId,
        cell: InstanceCellStateSchema.nullable(),
        observation: ObservationSchema.nullable(),
        open_operations: z.array(
          z.object({ operation_id: z.string(), action: z.string(), generation: z.number(), status: z.string() }).strict(),
        ),
      })
      .strict(),
  },
  'instances/history': {
    params: z.object({ instance_id: instanceId, limit: z.number().int().min(1).max(10_000).default(500) }).strict(),
    result: z.array(EvidenceSchema),
  },
  /** Accepts a lifecycle command; the cell then settles in the background with instances/changed notifications. */
  'instances/command': {
    params: z.object({ request: OperationRequestSchema }).strict(),
    result: CommandReplySchema,
  },
  'instances/reconcile': {
    params: z.object({ instance_id: instanceId }).strict(),
    result: z
      .object({
        classes: z.array(z.string()),
        actions: z.array(z.object({ kind: z.string(), operation_id: z.string().optional(), why: z.string() })),
        state: z.string(),
        settled: z.boolean(),
      })
      .strict(),
  },
  'ledger/show': {
    params: z.object({ operation_id: z.string().min(1).max(255) }).strict(),
    result: z.object({ operation: z.record(z.string(), z.unknown()).nullable(), evidence: z.array(EvidenceSchema) }).strict(),
  },
} as const;

export type RpcInstanceMethod = keyof typeof RPC_INSTANCE_METHODS;

/** Pushed whenever an instance's cell changes state (no polling). */
export const InstanceChangedNotificationSchema = z.object({ instance_id: instanceId, state: InstanceCellStateSchema }).strict();
export const NOTIFICATION_INSTANCE_CHANGED = 'instances/changed';
