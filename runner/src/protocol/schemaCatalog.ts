import { z } from 'zod';
import { CellSpecSchema } from './cellSpec.js';
import { CellResultSchema } from './cellResult.js';
import { HealthReportSchema } from './health.js';
import { FixReportSchema } from './fixReport.js';

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
  };
}

function withId(name: string, schema: Record<string, unknown>): Record<string, unknown> {
  return { $id: `https://forge-cells.dev/schemas/${name}.schema.json`, title: name, ...schema };
}

export function renderSchemaFile(schema: unknown): string {
  return JSON.stringify(schema, null, 2) + '\n';
}
