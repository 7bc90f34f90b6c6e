import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'mocha';
import { type InstanceSpec, InstanceSpecSchema } from '../../../runner/src/protocol/instanceCell.js';
import type { InstanceProvider, InstanceRef } from '../../../runner/src/instances/providers/instanceProvider.js';

export interface ConformanceTarget {
  name: string;
  make: (stateDir: string) => InstanceProvider;
  spec: Partial<InstanceSpec>;
  /** What the runtime said when it stopped, for a failure message. */
  whyNotRunning?: (stateDir: string, instance: string, generation: number) => string;
  /** Skip (locally) or fail (CI) when the runtime is missing. */
  require?: (ctx: Context) => Promise<void>;
}

/** The same cases for every instance provider: idempotent effects, inspect, probe, env scrub. */
export function describeInstanceProviderConformance(t: ConformanceTarget): void {
  describe(`instance provider conformance: ${t.name}`, function () {
    this.timeout(180_000);
    let dir: string;
    let provider: InstanceProvider;
    const made: InstanceRef[] = [];
    const ref = (instance: string, generation = 1, spec: Partial<InstanceSpec> = {}): InstanceRef => {
      const r = {
        instance_id: instance,
        generation,
        operation_id: `op-${instance}-${generation}`,
        spec: InstanceSpecSchema.parse({ ...t.spec, ...spec }),
      };
      made.push(r);
      return r;
    };

    /** Readiness may take a boot (qemu): poll like enrollment does. */
    const eventuallyReady = async (r: InstanceRef): Promise<boolean> => {
      const until = Date.now() + 60_000;
      for (;;) {
        if ((await provider.probe(r)).ready) return true;
        if (Date.now() > until) return false;
        await new Promise((res) => setTimeout(res, 200));
      }
    };

    before(async function () {
      await t.require?.(this);
      dir = mkdtempSync(join(tmpdir(), 'forge-inst-prov-'));
      provider = t.make(dir);
    });
    after(async () => {
      for (const r of made) await provider?.destroy(r).catch(() => undefined);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('create makes one running runtime; a repeat makes nothing', async () => {
      const r = ref('c1');
      assert.equal((await provider.inspect('c1', 1)).runtime_state, 'absent');
      const first = await provider.create(r);
      assert.equal(first.changed, true);
      assert.equal(first.observation.runtime_state, 'running');
      const again = await provider.create(r);
      assert.equal(again.changed, false);
      assert.equal(again.observation.runtime_id, first.observation.runtime_id, 'the same runtime, not a second one');
    });

    it('stop, start and destroy are idempotent for their incarnation', async () => {
      const r = ref('c2');
      await provider.create(r);
      assert.deepEqual([(await provider.stop(r)).changed, (await provider.inspect('c2', 1)).runtime_state], [true, 'exited']);
      assert.equal((await provider.stop(r)).changed, false);
      const started = await provider.start(r);
      assert.deepEqual([started.changed, started.observation.runtime_state], [true, 'running']);
      assert.equal((await provider.start(r)).changed, false);
      const destroyed = await provider.destroy(r);
      assert.deepEqual([destroyed.changed, destroyed.observation.runtime_state], [true, 'removed']);
      assert.equal((await provider.destroy(r)).changed, false);
      await assert.rejects(provider.start(r), /provision a new generation/);
    });

    it('generations are separate runtimes', async () => {
      const g1 = ref('c3', 1);
      const g2 = ref('c3', 2);
      await provider.create(g1);
      await provider.create(g2);
      const [a, b] = [await provider.inspect('c3', 1), await provider.inspect('c3', 2)];
      assert.equal(a.runtime_state, 'running', t.whyNotRunning?.(dir, 'c3', 1));
      assert.equal(b.runtime_state, 'running', t.whyNotRunning?.(dir, 'c3', 2));
      assert.notEqual(a.runtime_id, b.runtime_id);
      await provider.destroy(g1);
      assert.equal((await provider.inspect('c3', 2)).runtime_state, 'running');
    });

    it('probe: ready by default while running; a readiness command decides otherwise', async () => {
      const plain = ref('c4');
      await provider.create(plain);
      assert.equal(await eventuallyReady(plain), true);
      const never = ref('c5', 1, { readiness: ['sh', '-c', 'exit 3'] });
      await provider.create(never);
      assert.equal((await provider.probe(never)).ready, false);
      await provider.stop(plain);
      assert.equal((await provider.probe(plain)).ready, false);
    });

    it('the runner environment does not reach the instance; spec.env does', async () => {
      process.env.FORGE_TEST_RUNNER_SECRET = 'sk-should-not-leak';
      try {
        const r = ref('c6', 1, {
          env: { GREETING: 'hi' },
          readiness: ['sh', '-c', 'test -z "$FORGE_TEST_RUNNER_SECRET" && test "$GREETING" = hi'],
        });
        await provider.create(r);
        assert.equal(await eventuallyReady(r), true);
      } finally {
        delete process.env.FORGE_TEST_RUNNER_SECRET;
      }
    });
  });
}
