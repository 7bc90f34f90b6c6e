// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import type { InstanceProviderName, InstanceProviders } from '../providers/instanceProviderRegistry.js';
import { type EffectOutcome, type InstanceProvider, type InstanceRef, ProviderUnreachableError } from '../providers/instanceProvider.js';

type EffectMethod = 'create' | 'start' | 'stop' | 'destroy';

export interface ProviderCall {
  method: EffectMethod;
  operation_id: string;
  instance_id: string;
  generation: number;
  changed: boolean | null;
}

/**
 * Wraps the real providers to record every effect call (qualification counts them) and,
 * when armed, to lose the provider's answer after the real effect was made.
 */
export class InstrumentedProviders implements InstanceProviders {
  readonly calls: ProviderCall[] = [];
  private readonly wrapped = new Map<InstanceProviderName, InstanceProvider>();
  /** Operation ids whose next provider answer is dropped (the effect still happens). */
  readonly dropNextAnswer = new Set<string>();

  constructor(private readonly inner: InstanceProviders) {}

  get(name: InstanceProviderName): InstanceProvider | null {
    const real = this.inner.get(name);
    if (!real) return null;
    let w = this.wrapped.get(name);
    if (!w) {
      w = this.wrap(real);
      this.wrapped.set(name, w);
    }
    return w;
  }

  callsFor(operationId: string): ProviderCall[] {
    return this.calls.filter((c) => c.operation_id === operationId);
  }

  /** Calls that made an externally visible effect, per operation id. */
  effectsPerOperation(): Map<string, number> {
    const m = new Map<string, number>();
    for (const c of this.calls) if (c.changed) m.set(c.operation_id, (m.get(c.operation_id) ?? 0) + 1);
    return m;
  }

  private wrap(real: InstanceProvider): InstanceProvider {
    const effect =
      (method: EffectMethod) =>
      async (ref: InstanceRef): Promise<EffectOutcome> => {
        const call: ProviderCall = {
          method,
          operation_id: ref.operation_id,
          instance_id: ref.instance_id,
          generation: ref.generation,
          changed: null,
        };
        this.calls.push(call);
        const outcome = await real[method](ref);
        call.changed = outcome.changed;
        if (this.dropNextAnswer.delete(ref.operation_id))
          throw new ProviderUnreachableError('qualification: provider answer dropped after the effect');
        return outcome;
      };
    return {
      name: real.name,
      capabilities: () => real.capabilities(),
      available: () => real.available(),
      create: effect('create'),
      start: effect('start'),
      stop: effect('stop'),
      destroy: effect('destroy'),
      inspect: (id, gen) => real.inspect(id, gen),
      probe: (ref) => real.probe(ref),
    };
  }
}
