import { z } from 'zod';
import { ProviderNameSchema } from './cellResult.js';
import { IsolationReportSchema } from './isolation.js';

export const ProviderHealthSchema = z
  .object({
    provider: ProviderNameSchema,
    available: z.boolean(),
    reason: z.string().describe('Why it is (un)available, in one sentence a user can act on.'),
    isolation: IsolationReportSchema.nullable(),
    details: z.record(z.string(), z.string()),
  })
  .strict();

export const HealthReportSchema = z
  .object({
    generated_at: z.string(),
    default_provider: ProviderNameSchema.nullable(),
    providers: z.array(ProviderHealthSchema),
  })
  .strict();

export type ProviderHealth = z.infer<typeof ProviderHealthSchema>;
export type HealthReport = z.infer<typeof HealthReportSchema>;
