// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { requestHash } from '../operationRequest.js';
import type { MeasureResult, QualifyContext } from './qualifyContext.js';

/**
 * Every lifecycle action delivered many times under one operation id, through the cell and
 * straight to the ledger (transport retries), in concurrent bursts: exactly one provider
 * effect per operation, checked against the provider calls and, for host instances, the
 * journal the instance processes write themselves.
 */
export async function duplicateDelivery(ctx: QualifyContext): Promise<MeasureResult> {
  const repeats = ctx.options.full ? 10_000 : 200;
  const id = 'dup-1';
  const actions = ['provision', 'stop', 'start', 'destroy'] as const;
  let duplicates = 0;
  let deliveries = 0;
  const perAction: Record<string, number> = {};
  for (const action of actions) {
    const opId = `dup-${action}`;
    await ctx.lifecycle(id, opId, 1, action);
    deliveries++;
    const request = {
      operation_id: opId,
      instance_id: id,
      generation: 1,
      action,
      payload: action === 'provision' ? { spec: ctx.spec() } : {},
    };
    const hash = requestHash(request);
    for (let sent = 1; sent < repeats;) {
      const burst = Math.min(50, repeats - sent);
      await Promise.all(
        Array.from({ length: burst }, (_, i) =>
          (sent + i) % 2 === 0 ? ctx.coordinator.submit(request) : ctx.management.apply(request, hash),
        ),
      );
      sent += burst;
      deliveries += burst;
    }
    await ctx.coordinator.drive(id, { timeoutMs: 10_000 });
    const effects = ctx.providers.effectsPerOperation().get(opId) ?? 0;
    perAction[action] = effects;
    duplicates += Math.max(0, effects - 1) + (effects === 0 ? 1 : 0);
    ctx.options.onProgress?.(`duplicate delivery: ${action} x${repeats}: ${effects} provider effect(s)`);
  }
  let journalOk = true;
  if (ctx.options.provider === 'host') {
    const kinds = ctx.journal(id, 1).map((l) => l.split(' ')[0]);
    journalOk = kinds.join(',') === 'start,stop,start,stop';
    if (!journalOk) duplicates++;
  }
  return {
    measure: 'duplicate lifecycle delivery',
    trials: deliveries,
    result: `${duplicates} duplicate provider effect(s); effects per action ${JSON.stringify(perAction)}${ctx.options.provider === 'host' ? `; instance journal ${journalOk ? 'start,stop,start,stop' : 'WRONG'}` : ''}`,
    threshold: `${repeats} repeats per action; zero duplicate effects`,
    pass: duplicates === 0,
    details: { repeats, perAction },
  };
}
