import { z } from 'zod';
import { CellSpecSchema } from './cellSpec.js';
import { CellResultSchema } from './cellResult.js';
import { HealthReportSchema } from './health.js';
import { FixReportSchema } from './fixReport.js';
import {
  CapabilityDescriptorSchema,
  CellInputSchema,
  CommandReplySchema,
  EffectResultSchema,
  EvidenceSchema,
  InstanceCellStateSchema,
  OperationRequestSchema,
  PROTOCOL_VERSION,
  VersionEnvelopeSchema,
} from './instanceCell.js';
import { ModelReplyRequestSchema, ModelReplySchema, REQUEST_MODEL_REPLY, RPC_FIX_METHODS, RPC_FIX_NOTIFICATIONS } from './rpcFix.js';
import { InstanceChangedNotificationSchema, NOTIFICATION_INSTANCE_CHANGED, RPC_INSTANCE_METHODS } from './rpcInstances.js';

/**
 * The JSON Schema files in schemas/ are generated from these zod schemas; a test fails when
 * the committed files drift. Inputs are exported as accepted on input (defaults optional),
 * outputs as produced.
 */
export function schemaCatalog(): Record<string, unknown> {
  return {
    'cell-spec.schema.json': withId('cell-spec', z.toJSONSchema(CellSpecSchema, { io: 'input' })),
    'cell-result.schema.json': withId('cell-result', z.toJSONSchema(CellResultSchema, { io: 'output' })),
    'health-report.schema.json': withId('health-report', z.toJSONSchema(HealthReportSchema, { io: 'output' })),
    'fix-report.schema.json': withId('fix-report', z.toJSONSchema(FixReportSchema, { io: 'output' })),
    'instance-cell-v1.schema.json': instanceCellContract(),
    'rpc-instances.schema.json': rpcInstanceMethods(),
    'rpc-fix.schema.json': rpcFixMethods(),
  };
}

/**
 * InstanceCell/v1, the normative contract: one definition per message. Messages a caller
 * sends are exported as accepted on input, messages a cell or management produces as produced.
 */
function instanceCellContract(): Record<string, unknown> {
  const input = (s: z.ZodType) => strip(z.toJSONSchema(s, { io: 'input' }));
  const output = (s: z.ZodType) => strip(z.toJSONSchema(s, { io: 'output' }));
  return {
    $id: 'https://forge-cells.dev/schemas/instance-cell-v1.schema.json',
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: PROTOCOL_VERSION,
    description: 'InstanceCell/v1: additive changes only within v1 (new optional fields, new enum members); a semantic break is v2.',
    $defs: {
      OperationRequest: input(OperationRequestSchema),
      CellInput: input(CellInputSchema),
      CommandReply: output(CommandReplySchema),
      InstanceCellState: output(InstanceCellStateSchema),
      EffectResult: output(EffectResultSchema),
      Evidence: output(EvidenceSchema),
      CapabilityDescriptor: output(CapabilityDescriptorSchema),
      VersionEnvelope: output(VersionEnvelopeSchema),
    },
  };
}

/** The JSON-RPC instance methods: params as accepted, results as produced, and notifications. */
function rpcInstanceMethods(): Record<string, unknown> {
  const methods: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(RPC_INSTANCE_METHODS)) {
    methods[name] = { params: strip(z.toJSONSchema(m.params, { io: 'input' })), result: strip(z.toJSONSchema(m.result, { io: 'output' })) };
  }
  return {
    $id: 'https://forge-cells.dev/schemas/rpc-instances.schema.json',
    title: 'forge-runner serve --stdio: instance methods',
    description: 'JSON-RPC 2.0 methods (params/result) and notifications of the runner for durable instances.',
    methods,
    notifications: { [NOTIFICATION_INSTANCE_CHANGED]: strip(z.toJSONSchema(InstanceChangedNotificationSchema, { io: 'output' })) },
  };
}

/** The JSON-RPC fix, review and cell methods, their notifications, and the one request the runner sends the client. */
function rpcFixMethods(): Record<string, unknown> {
  const methods: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(RPC_FIX_METHODS)) {
    methods[name] = { params: strip(z.toJSONSchema(m.params, { io: 'input' })), result: strip(z.toJSONSchema(m.result, { io: 'output' })) };
  }
  const notifications: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(RPC_FIX_NOTIFICATIONS)) notifications[name] = strip(z.toJSONSchema(s, { io: 'output' }));
  return {
    $id: 'https://forge-cells.dev/schemas/rpc-fix.schema.json',
    title: 'forge-runner serve --stdio: fix, review and cell methods',
    description: 'JSON-RPC 2.0 methods (params/result), notifications pushed by the runner, and client requests (runner -> client).',
    methods,
    notifications,
    client_requests: {
      [REQUEST_MODEL_REPLY]: {
        params: strip(z.toJSONSchema(ModelReplyRequestSchema, { io: 'output' })),
        result: strip(z.toJSONSchema(ModelReplySchema, { io: 'input' })),
      },
    },
  };
}

function strip(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _drop, ...rest } = schema;
  return rest;
}

function withId(name: string, schema: Record<string, unknown>): Record<string, unknown> {
  return { $id: `https://forge-cells.dev/schemas/${name}.schema.json`, title: name, ...schema };
}

export function renderSchemaFile(schema: unknown): string {
  return JSON.stringify(schema, null, 2) + '\n';
}
