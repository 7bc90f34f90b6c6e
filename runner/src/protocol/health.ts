import * as z from './zodMini.js';
import { ProviderNameSchema } from './cellResult.js';
import { IsolationReportSchema } from './isolation.js';

export const ProviderHealthSchema = z.strictObject({
  provider: ProviderNameSchema,
  available: z.boolean(),
  reason: z.string().check(z.describe('Why it is (un)available, in one sentence a user can act on.')),
  isolation: z.nullable(IsolationReportSchema),
  details: z.record(z.string(), z.string()),
});

export const HealthReportSchema = z.strictObject({
  generated_at: z.string(),
  default_provider: z.nullable(ProviderNameSchema),
  providers: z.array(ProviderHealthSchema),
});

export type ProviderHealth = z.infer<typeof ProviderHealthSchema>;
export type HealthReport = z.infer<typeof HealthReportSchema>;
