import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { requireFeature } from '../../helpers/requirement.js';
import { swarmUnavailable } from '../../helpers/swarm.js';

const ROOT = process.env.FORGE_SWARM_ROOT || '/var/lib/forge-swarm';
const script = (cmd: string) => spawnSync('bash', ['scripts/swarm-cluster.sh', cmd], { encoding: 'utf8', timeout: 300_000 });
const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { encoding: 'utf8' });

/**
 * The local cluster (scripts/swarm-cluster.sh) is three hosts in one machine: down must leave
 * nothing of them (namespaces, veths, the bridge, the iptables rule, mounts, the registry),
 * seen here by the system's own tools rather than by the script's check alone; up makes it
 * whole again for the suites after this one.
 */
describe('the local swarm cluster tears down clean', function () {
  this.timeout(600_000);

  before(async function () {
    const why = await swarmUnavailable(3);
    requireFeature(this, why === null, why ?? '');
  });

  it('down leaves no namespace, veth, bridge, iptables rule, mount, process or directory; up brings all three nodes back', async () => {
    try {
      const down = script('down');
      assert.equal(down.status, 0, down.stdout + down.stderr);
      assert.match(down.stdout, /down: nothing of the cluster is left/);
      assert.equal(sh('ip netns list | grep forge-swarm || true').trim(), '', 'a namespace is left');
      assert.equal(sh('ip -o link show | grep -E "fswarm|forgeswarm" || true').trim(), '', 'a link is left');
      assert.equal(sh('iptables -w -S FORWARD | grep forge-swarm-cluster || true').trim(), '', 'the FORWARD rule is left');
      assert.deepEqual(
        readFileSync('/proc/self/mounts', 'utf8')
          .split('\n')
          .filter((m) => m.includes(ROOT) || m.includes('/run/netns/forge-swarm')),
        [],
      );
      assert.equal(existsSync(ROOT), false, `${ROOT} is left`);
      assert.equal(sh(`pgrep -f "[d]ockerd --data-root ${ROOT}" || true`).trim(), '', 'a node engine still runs');
      assert.equal(sh(`pgrep -f "[d]ocker-registry serve ${ROOT}" || true`).trim(), '', 'the registry still runs');
      assert.equal(sh("docker info --format '{{.Swarm.LocalNodeState}}'").trim(), 'inactive');
      const again = script('down');
      assert.equal(again.status, 0, `down is idempotent: ${again.stdout}${again.stderr}`);
    } finally {
      const up = script('up');
      assert.equal(up.status, 0, up.stdout + up.stderr);
    }
    assert.equal(await swarmUnavailable(3), null);
  });
});
