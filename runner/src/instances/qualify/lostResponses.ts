// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import type { MeasureResult, QualifyContext } from './qualifyContext.js';

/**
 * The provider made the effect but the answer was lost, either between the provider and
 * management or between management and the cell: the operation becomes unknown and is
 * resolved by looking it up, without a second effect.
 */
export async function lostResponses(ctx: QualifyContext): Promise<MeasureResult> {
  const trials = ctx.options.full ? 100 : 6;
  let resolved = 0;
  let extraEffects = 0;
  let sawUnknown = 0;
  for (let i = 0; i < trials; i++) {
    const id = `lost-${i}`;
    const opId = `lost-${i}-p1`;
    if (i % 2 === 0) ctx.providers.dropNextAnswer.add(opId);
    else ctx.dropNextManagementAnswer = true;
    const state = await ctx.lifecycle(id, opId, 1, 'provision');
    const op = state.operations.find((o) => o.operation_id === opId);
    const effects = ctx.providers.effectsPerOperation().get(opId) ?? 0;
    const journalStarts = ctx.options.provider === 'host' ? ctx.journal(id, 1).filter((l) => l.startsWith('start')).length : 1;
    if (op && op.attempts > 0) sawUnknown++;
    if (state.state === 'ready' && op?.status === 'succeeded') resolved++;
    extraEffects += Math.max(0, effects - 1) + Math.max(0, journalStarts - 1);
    await ctx.lifecycle(id, `lost-${i}-d1`, 1, 'destroy');
  }
  return {
    measure: 'lost responses',
    trials,
    result: `${resolved}/${trials} resolved to succeeded (${sawUnknown} went through unknown -> lookup); ${extraEffects} second effect(s)`,
    threshold: 'resolved without a second effect',
    pass: resolved === trials && extraEffects === 0 && sawUnknown === trials,
  };
}
