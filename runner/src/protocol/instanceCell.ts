import { z } from 'zod';

/**
 * InstanceCell/v1: the normative contract between management, the embedded coordinator and
 * a Celld-hosted InstanceCell worker. schemas/instance-cell-v1.schema.json is exported from
 * here; changes within v1 must be additive (new optional fields, new enum members).
 */
export { PROTOCOL_VERSION } from './protocolVersion.js';
import { PROTOCOL_VERSION } from './protocolVersion.js';

export const INSTANCE_PROVIDERS = ['host', 'docker', 'qemu'] as const;
export const LIFECYCLE_ACTIONS = ['provision', 'start', 'stop', 'destroy'] as const;
export const CELL_STATES = [
  'requested',
  'provisioning',
  'enrolling',
  'ready',
  'stopping',
  'stopped',
  'failed',
  'unknown',
  'destroyed',
] as const;
export const OPERATION_STATUSES = ['pending', 'dispatched', 'unknown', 'succeeded', 'failed', 'rejected'] as const;
export const REJECT_REASONS = [
  'idempotency_mismatch',
  'stale_generation',
  'future_generation',
  'invalid_transition',
  'unknown_instance',
  'provider_unavailable',
  'invalid_request',
] as const;

export type CellStateName = (typeof CELL_STATES)[number];
export type OperationStatus = (typeof OPERATION_STATUSES)[number];
export type RejectReason = (typeof REJECT_REASONS)[number];
export type LifecycleAction = (typeof LIFECYCLE_ACTIONS)[number];

const id = z.string().min(1).max(255);

/** What a provision creates: the runtime and how to tell it is ready. */
export const InstanceSpecSchema = z
  .object({
    provider: z.enum(INSTANCE_PROVIDERS),
    image: z.string().min(1).max(512).optional().describe('docker/qemu image; host takes none'),
    command: z.array(z.string().max(4096)).min(1).max(256).optional().describe('the long-lived process (default: sleep forever)'),
    readiness: z
      .array(z.string().max(4096))
      .min(1)
      .max(256)
      .optional()
      .describe('probe run inside the instance; ready when it exits 0 (default: the runtime answers an exec)'),
    enroll_timeout_s: z.number().positive().max(3600).default(60),
    probe_interval_ms: z.number().int().min(50).max(60_000).default(500),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(8192)).default({}),
    memory_mib: z.number().int().min(16).max(1_048_576).optional(),
    allow_net: z.boolean().default(false),
  })
  .strict();
export type InstanceSpec = z.output<typeof InstanceSpecSchema>;

export const OperationRequestSchema = z
  .object({
    operation_id: id.describe('Opaque, chosen by the caller; the same id may only ever mean the same request.'),
    instance_id: id,
    generation: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    action: z.enum(LIFECYCLE_ACTIONS),
    payload: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type OperationRequest = z.output<typeof OperationRequestSchema>;

/** What management observes of one runtime instance (never overwritten from desired state). */
export const ObservationSchema = z
  .object({
    generation: z.number().int().min(0),
    runtime_state: z.enum(['absent', 'created', 'running', 'exited', 'removed']),
    runtime_id: z.string().nullable(),
  })
  .strict();
export type Observation = z.output<typeof ObservationSchema>;

export const CellOperationSchema = z
  .object({
    operation_id: id,
    request_hash: z.string().regex(/^[0-9a-f]{64}$/),
    action: z.enum(LIFECYCLE_ACTIONS),
    generation: z.number().int().positive(),
    request: OperationRequestSchema.describe('kept so a lost submission can be resent under the same identity'),
    status: z.enum(OPERATION_STATUSES),
    from_state: z.enum(CELL_STATES).describe('the state before this operation was dispatched (restored if management rejects it)'),
    reason: z.string().nullable(),
    /** What the cell has to do next for it: submit to management, look it up, or nothing. */
    next: z.enum(['apply', 'lookup']).nullable(),
    attempts: z.number().int().min(0),
    accepted_at: z.number(),
    finished_at: z.number().nullable(),
  })
  .strict();
export type CellOperation = z.output<typeof CellOperationSchema>;

export const InstanceCellStateSchema = z
  .object({
    schema: z.literal(PROTOCOL_VERSION),
    instance_id: id,
    /** The incarnation management created and observed last (0: none yet). */
    generation: z.number().int().min(0),
    state: z.enum(CELL_STATES),
    desired: z.enum(['ready', 'stopped', 'destroyed']).nullable(),
    spec: InstanceSpecSchema.nullable(),
    observed: ObservationSchema.nullable(),
    operations: z.array(CellOperationSchema).describe('accepted commands in order; finished ones are pruned by retention'),
    enrollment: z
      .object({ deadline_at: z.number(), probes: z.number().int().min(0), probe_due: z.boolean() })
      .strict()
      .nullable(),
    last_error: z.string().nullable(),
    updated_at: z.number(),
  })
  .strict();
export type InstanceCellState = z.output<typeof InstanceCellStateSchema>;

export const CommandReplySchema = z
  .object({
    operation_id: id,
    instance_id: id,
    status: z.enum(OPERATION_STATUSES),
    reason: z.string().nullable(),
    detail: z.string().nullable(),
    state: z.enum(CELL_STATES).nullable(),
    generation: z.number().int().min(0),
  })
  .strict();
export type CommandReply = z.output<typeof CommandReplySchema>;

/** Management's answer to apply/lookup of one operation. */
export const EffectResultSchema = z
  .object({
    operation_id: id,
    outcome: z.enum(['succeeded', 'failed', 'rejected', 'unknown', 'not_found']),
    reason: z.string().nullable(),
    observation: ObservationSchema.nullable(),
  })
  .strict();
export type EffectResult = z.output<typeof EffectResultSchema>;

/** One recorded transition: who, what, when, for which generation and operation. */
export const EvidenceSchema = z
  .object({
    at: z.number(),
    source: z.enum(['cell', 'management']),
    actor: z.string(),
    instance_id: id,
    operation_id: z.string().nullable(),
    generation: z.number().int().min(0),
    event: z.string(),
    from_state: z.string().nullable(),
    to_state: z.string().nullable(),
    detail: z.string().nullable(),
  })
  .strict();
export type Evidence = z.output<typeof EvidenceSchema>;

export const CAPABILITIES = [
  'task.exec',
  'session.pty',
  'workspace.bind',
  'process.spawn',
  'worker.fetch',
  'worker.rpc',
  'durable.storage',
  'durable.alarm',
  'websocket.inbound',
  'network.outbound.fetch',
  'wasm.module',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

export const CapabilityDescriptorSchema = z
  .object({
    runtime: z.string(),
    isolation: z.string(),
    /** Every capability is listed: absence is stated, never implied. */
    capabilities: z.record(
      z.enum(CAPABILITIES),
      z.enum(['yes', 'no', 'experimental', 'via agent', 'via OS', 'policy', 'policy-constrained']),
    ),
  })
  .strict();
export type CapabilityDescriptor = z.output<typeof CapabilityDescriptorSchema>;

/** The signed envelope every Celld adapter response carries; unknown versions fail closed. */
export const VersionEnvelopeSchema = z
  .object({ adapter_version: z.string(), celld_version: z.string(), protocol_version: z.string() })
  .strict();

/** Everything a cell can be told: a command, an effect's result, a probe, an alarm, an observation. */
export const CellInputSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('command'),
      request: OperationRequestSchema,
      hash: z.string().regex(/^[0-9a-f]{64}$/),
      spec: InstanceSpecSchema.nullable(),
    })
    .strict(),
  z.object({ kind: z.literal('effect_result'), result: EffectResultSchema }).strict(),
  z
    .object({ kind: z.literal('probe_result'), generation: z.number().int().min(0), ready: z.boolean(), detail: z.string().max(4096) })
    .strict(),
  z.object({ kind: z.literal('alarm'), name: z.string().min(1).max(300) }).strict(),
  z.object({ kind: z.literal('observe'), observation: ObservationSchema }).strict(),
]);
export type CellInput = z.output<typeof CellInputSchema>;
