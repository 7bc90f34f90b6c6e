import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import Docker from 'dockerode';
import { SwarmCellProvider } from '../../runner/src/cells/providers/swarmCellProvider.js';
import type { CellResult } from '../../runner/src/protocol/cellResult.js';
import { TEST_IMAGES } from '../helpers/docker.js';
import { runEgressAttacks, runEgressRules } from '../helpers/egressAttacks.js';
import { requireFeature } from '../helpers/requirement.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../helpers/swarm.js';

/** The test cluster's addresses (scripts/swarm-cluster.sh): the manager's bridge and the workers' namespaces. */
const NODE_ADDRESSES = ['10.210.0.1', '10.210.0.12', '10.210.0.13'];

const listen = (s: Server, host: string) =>
  new Promise<number>((resolve) => s.listen(0, host, () => resolve((s.address() as { port: number }).port)));

/**
 * Swarm cells with allow_net reach the runner's egress proxy through the relay on their own
 * overlay, and nothing else: the docker egress battery, then what is new with a cluster
 * (another cell's task, the relay's other side, the nodes), with cells on two nodes.
 */
describe('swarm cell egress (allow_net through the relay on a per-cell overlay)', function () {
  this.timeout(300_000);
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  let provider: SwarmCellProvider;
  let nodeIds: string[] = [];

  before(async function () {
    const why = await swarmUnavailable(2);
    requireFeature(this, why === null, why ?? '');
    provider = new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY });
    const nodes = (await docker.listNodes()) as { ID: string; Spec?: { Role?: string }; Status?: { State?: string } }[];
    // Workers first: a cell there crosses the overlay between namespaces to reach the relay on the manager.
    nodeIds = nodes
      .filter((n) => n.Status?.State === 'ready')
      .sort((a, b) => (a.Spec?.Role === 'worker' ? 0 : 1) - (b.Spec?.Role === 'worker' ? 0 : 1))
      .map((n) => n.ID);
  });
  after(async () => provider?.drain());

  it('the install network battery: only the allowlisted host, only through the proxy', async () => {
    await runEgressAttacks(provider, { base: { image: TEST_IMAGES.bookworm, timeout_s: 120 } });
  });

  it('port rules, a deny list that wins, and what the proxy refused in the result (egress_denied)', async () => {
    await runEgressRules(provider, { base: { image: TEST_IMAGES.bookworm, timeout_s: 120 } });
  });

  it("a cell on one node cannot reach another cell's task, the relay's other side or any node; the allowlisted host it can; nothing is left after", async () => {
    const web: Server = createServer((_req, res) => res.end('hello-through-proxy'));
    const webPort = await listen(web, '127.0.0.1');
    // Each cell pinned to a node of its own.
    const onNode = (id: string) => new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY, constraints: [`node.id==${id}`] });
    const first = onNode(nodeIds[0]!);
    const second = onNode(nodeIds[1]!);
    const stop = new AbortController();
    // The suite's own provider keeps its relay and the overlays made ahead for it until after().
    const relaysBefore = new Set((await relayNames(docker)).map((r) => r.name));
    try {
      // The listener: says its address, then waits for a connection that must never come (a
      // line follows the address: the stream holds back its last byte until more comes).
      let announced: (ip: string) => void = () => undefined;
      const address = new Promise<string>((resolve) => (announced = resolve));
      let seen = '';
      const listener = first.run(
        {
          image: TEST_IMAGES.busybox,
          cmd: 'echo "ADDR $(ip -o -4 addr show | grep -v " lo " | sed -n "s/.* inet \\([0-9.]*\\)\\/.*/\\1/p" | head -1)"; echo listening; nc -l -p 9999 && echo GOT-CONNECTION',
          allow_net: ['localhost'],
          timeout_s: 120,
        },
        {
          signal: stop.signal,
          onOutput: (c) => {
            seen += c.toString();
            const m = /ADDR (\d+\.\d+\.\d+\.\d+)\n/.exec(seen);
            if (m) announced(m[1]!);
          },
        },
      );
      const other = await Promise.race([address, listener.then((r) => assert.fail(`the listener ended early: ${r.output}`))]);
      const relay = await relayContainer(docker);
      const targets = [
        ['other-cell', other, 9999],
        ['relay-upstream-gateway', relay.gateway, relay.proxyPort],
        ['relay-egress-side', relay.egressIp, 3128],
        ...NODE_ADDRESSES.flatMap((a) => [
          [`node-${a}-registry`, a, 5000],
          [`node-${a}-swarm`, a, 2377],
        ]),
        ['node-loopback-registry', '127.0.0.1', 5000],
      ] as const;
      const probe = targets.map(
        ([name, host, port]) =>
          `nc -w 3 ${host} ${port} </dev/null >/dev/null 2>&1 && echo "${name}: CONNECTED" || echo "${name}: blocked"`,
      );
      const r: CellResult = await second.run({
        image: TEST_IMAGES.busybox,
        cmd: [...probe, `wget -q -O - http://localhost:${webPort}/ && echo; echo done`].join('; '),
        allow_net: ['localhost'],
        timeout_s: 120,
      });
      assert.equal(r.exit_code, 0, r.output);
      for (const [name] of targets) assert.match(r.output, new RegExp(`^${name}: blocked$`, 'm'), `${name} was reached:\n${r.output}`);
      assert.match(r.output, /hello-through-proxy/, r.output);
      assert.equal(r.isolation.net, 'allowlist');
      stop.abort();
      const l = await listener;
      assert.doesNotMatch(l.output, /GOT-CONNECTION/);
      assert.notEqual(l.node, r.node, `both cells ran on ${r.node}`);
    } finally {
      stop.abort();
      web.close();
      await first.drain();
      await second.drain();
    }
    // Each cell's overlay, the overlays made ahead and each provider's relay are gone once the providers drained.
    // This process's only (labelled with its runner pid): other runners may share the cluster.
    const networks = (await docker.listNetworks({ filters: { driver: ['overlay'], label: [`forge.runner.pid=${process.pid}`] } })).filter(
      (n) => n.Name.startsWith('forge-net-'),
    );
    assert.deepEqual(
      networks.filter((n) => !relaysBefore.has(n.Labels?.['forge.relay'] ?? '')).map((n) => n.Name),
      [],
    );
    const relays = await relayNames(docker);
    assert.deepEqual(
      relays.filter((r) => !relaysBefore.has(r.name)).map((r) => r.name),
      [],
      'a drained provider left its relay',
    );
  });

  it('a cell without allow_net still has no link but lo, next to cells that have one', async () => {
    const [plain, netted] = await Promise.all([
      provider.run({ image: TEST_IMAGES.busybox, cmd: 'ip -o link show up; ip route; echo done' }),
      provider.run({ image: TEST_IMAGES.busybox, cmd: 'ip -o link show up; ip route; echo done', allow_net: ['localhost'] }),
    ]);
    assert.doesNotMatch(plain.output, /eth|default/, plain.output);
    assert.equal(plain.isolation.net, 'none');
    assert.match(netted.output, /eth0/, netted.output);
    assert.doesNotMatch(netted.output, /default/, `a route out:\n${netted.output}`);
  });
});

/** The relay container of the suite's provider: its address on the egress bridge and where it forwards. */
async function relayContainer(docker: Docker): Promise<{ gateway: string; proxyPort: number; egressIp: string }> {
  const [c] = await docker.listContainers({ filters: { label: ['forge.role=egress-relay'] } });
  assert.ok(c, 'no relay container runs');
  const info = await docker.getContainer(c.Id).inspect();
  const cmd = info.Config.Cmd ?? [];
  const egressIp = info.NetworkSettings.Networks['forge-egress']?.IPAddress ?? '';
  return { gateway: cmd[cmd.length - 2]!, proxyPort: Number(cmd[cmd.length - 1]), egressIp };
}

async function relayNames(docker: Docker): Promise<{ name: string }[]> {
  const all = await docker.listContainers({ all: true, filters: { label: ['forge.role=egress-relay'] } });
  return all
    .filter((c) => c.Labels['forge.runner.pid'] === String(process.pid))
    .map((c) => ({ name: (c.Names[0] ?? '').replace(/^\//, '') }));
}
