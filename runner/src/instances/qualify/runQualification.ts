// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { dirname, join } from 'node:path';
import { capabilityHonesty } from './capabilityHonesty.js';
import { celldDisabled } from './celldDisabled.js';
import { duplicateDelivery } from './duplicateDelivery.js';
import { lostResponses } from './lostResponses.js';
import { type MeasureResult, QualifyContext, type QualifyOptions } from './qualifyContext.js';
import { restartDuringProvision } from './restartDuringProvision.js';
import { staleGeneration } from './staleGeneration.js';

export interface QualificationReport {
  full: boolean;
  provider: string;
  go: boolean;
  measures: MeasureResult[];
  duration_s: number;
}

/** The go/no-go measures of the durable-orchestration lane, each in its own sandbox state. */
export async function runQualification(options: QualifyOptions): Promise<QualificationReport> {
  const started = performance.now();
  const workerBundle = join(dirname(options.runnerPath), 'instance-cell-worker.js');
  const measures: MeasureResult[] = [];
  const plan: Array<(ctx: QualifyContext) => Promise<MeasureResult>> = [
    duplicateDelivery,
    restartDuringProvision,
    staleGeneration,
    lostResponses,
    (ctx) => capabilityHonesty(ctx, workerBundle),
    (ctx) => celldDisabled(ctx, workerBundle),
  ];
  for (const measure of plan) {
    const ctx = new QualifyContext(options);
    try {
      measures.push(await measure(ctx));
    } catch (e) {
      measures.push({
        measure: measure.name || 'measure',
        trials: 0,
        result: `error: ${(e as Error).message}`,
        threshold: '-',
        pass: false,
      });
    } finally {
      await ctx.cleanup();
    }
  }
  return {
    full: options.full,
    provider: options.provider,
    go: measures.every((m) => m.pass),
    measures,
    duration_s: (performance.now() - started) / 1000,
  };
}

export function formatQualification(r: QualificationReport): string {
  const lines: string[] = [];
  for (const m of r.measures) {
    lines.push(`${(m.pass ? 'GO' : 'NO-GO').padEnd(6)} ${m.measure} (${m.trials} trials)`);
    lines.push(`       ${m.result}`);
    lines.push(`       threshold: ${m.threshold}`);
  }
  lines.push(
    '',
    `${r.go ? 'GO' : 'NO-GO'} for durable orchestration (${r.full ? 'full counts' : 'reduced counts; --full for the go/no-go thresholds'}, ${r.provider} instances, ${r.duration_s.toFixed(1)} s)`,
  );
  return lines.join('\n') + '\n';
}
