// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { requestHash } from '../operationRequest.js';
import type { MeasureResult, QualifyContext } from './qualifyContext.js';

/** Destructive commands for an older generation: all rejected before any provider call. */
export async function staleGeneration(ctx: QualifyContext): Promise<MeasureResult> {
  const trials = ctx.options.full ? 100 : 20;
  const id = 'stale-1';
  await ctx.lifecycle(id, 'stale-p1', 1, 'provision');
  await ctx.lifecycle(id, 'stale-d1', 1, 'destroy');
  await ctx.lifecycle(id, 'stale-p2', 2, 'provision');
  const journalBefore = ctx.options.provider === 'host' ? ctx.journal(id, 2).length : 0;
  let rejected = 0;
  let providerCalls = 0;
  for (let i = 0; i < trials; i++) {
    const action = i % 2 === 0 ? 'stop' : 'destroy';
    const viaCell = { operation_id: `stale-cell-${i}`, instance_id: id, generation: 1, action, payload: {} } as const;
    const viaLedger = { ...viaCell, operation_id: `stale-ledger-${i}` };
    const reply = await ctx.coordinator.submit(viaCell);
    const direct = await ctx.management.apply(viaLedger, requestHash(viaLedger));
    if (
      reply.status === 'rejected' &&
      reply.reason === 'stale_generation' &&
      direct.outcome === 'rejected' &&
      direct.reason === 'stale_generation'
    )
      rejected++;
    providerCalls += ctx.providers.callsFor(viaCell.operation_id).length + ctx.providers.callsFor(viaLedger.operation_id).length;
  }
  const state = await ctx.coordinator.drive(id, { timeoutMs: 10_000 });
  const journalAfter = ctx.options.provider === 'host' ? ctx.journal(id, 2).length : 0;
  const ok = rejected === trials && providerCalls === 0 && journalAfter === journalBefore && state.state.state === 'ready';
  return {
    measure: 'stale-generation destructive commands',
    trials: trials * 2,
    result: `${rejected * 2}/${trials * 2} rejected stale_generation; ${providerCalls} provider call(s); generation 2 still ${state.state.state}`,
    threshold: '100% rejected before provider invocation',
    pass: ok,
  };
}
