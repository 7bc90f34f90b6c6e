import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InstanceSpecSchema } from '../../../runner/src/protocol/instanceCell.js';
import { HostInstanceProvider } from '../../../runner/src/instances/providers/hostInstanceProvider.js';
import { describeInstanceProviderConformance } from './instanceProviderConformance.js';

describeInstanceProviderConformance({
  name: 'host',
  make: (stateDir) => new HostInstanceProvider({ stateDir }),
  spec: { provider: 'host' },
});

describe('host instance provider', () => {
  it('the instance process outlives the call that started it, and destroy leaves no process behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-inst-host-'));
    const p = new HostInstanceProvider({ stateDir: dir });
    const ref = { instance_id: 'h1', generation: 1, operation_id: 'op', spec: InstanceSpecSchema.parse({ provider: 'host' }) };
    try {
      const created = await p.create(ref);
      const pid = Number(created.observation.runtime_id!.replace('pid:', ''));
      assert.ok(existsSync(`/proc/${pid}`));
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      assert.match(cmdline, /forge-instance/);
      await p.destroy(ref);
      assert.ok(!existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '), 'supervisor gone');
      assert.deepEqual(
        p.journal('h1', 1).map((l) => l.split(' ')[0]),
        ['start', 'stop'],
        'the journal is the record of effects',
      );
    } finally {
      await p.destroy(ref).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
