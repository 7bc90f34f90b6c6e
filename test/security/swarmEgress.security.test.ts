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
    // The suite's own provider may still be making pairs ahead: drained first, so that what is
    // left at the end can only be the two providers' below.
    await provider.drain();
    const before = new Set(await ownRelaysAndOverlays(docker));
    try {
      // The listener: says its address, then waits for a connection that must never come (a
      // line follows the address: the stream holds back its last byte until more comes).
      let announced: (ip: string) => void = () => undefined;
      const address = new Promise<string>((resolve) => (announced = resolve));
      let seen = '';
      const listener = first.run(
        {
          image: TEST_IMAGES.busybox,
          cmd: 'echo "ADDR $(ip -o -4 addr show | grep -v " lo " | sed -n "s/.* inet \\([0-9.]*\\)\\/.*/\\1/p" | head -1)"; echo "CREDS $(echo "$HTTP_PROXY" | sed "s#^http://\\([^@]*\\)@.*#\\1#")"; echo listening; nc -l -p 9999 && echo GOT-CONNECTION',
          allow_net: ['localhost'],
          timeout_s: 120,
        },
        {
          signal: stop.signal,
          onOutput: (c) => {
            seen += c.toString();
            const m = /ADDR (\d+\.\d+\.\d+\.\d+)\nCREDS \S+:\S+\n/.exec(seen);
            if (m) announced(m[1]!);
          },
        },
      );
      const other = await Promise.race([address, listener.then((r) => assert.fail(`the listener ended early: ${r.output}`))]);
      const stolen = /CREDS (\S+:\S+)\n/.exec(seen)?.[1];
      assert.ok(stolen, `the listener printed no credentials: ${seen}`);
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
        cmd: [
          ...probe,
          `wget -q -O - http://localhost:${webPort}/ && echo`,
          // The first cell's token, through this cell's own relay: bound to the first cell's relay, refused here.
          `p=$(echo "$HTTP_PROXY" | sed "s#//[^@]*@#//${stolen}@#"); http_proxy=$p HTTP_PROXY=$p wget -q -O - http://localhost:${webPort}/ 2>&1 | head -1; echo "stolen-token: $?"`,
          'echo done',
        ].join('; '),
        allow_net: ['localhost'],
        timeout_s: 120,
      });
      assert.equal(r.exit_code, 0, r.output);
      for (const [name] of targets) assert.match(r.output, new RegExp(`^${name}: blocked$`, 'm'), `${name} was reached:\n${r.output}`);
      assert.equal((r.output.match(/hello-through-proxy/g) ?? []).length, 1, `only its own token got through:\n${r.output}`);
      assert.match(r.output, /407 Proxy Authentication Required/, r.output);
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
    // Each cell's overlay and relay, and the pairs each provider made ahead, are gone once it
    // drained (the engine lists a removed overlay for a moment longer: waited for, bounded).
    let left: string[] = [];
    for (let i = 0; i < 60; i++) {
      left = (await ownRelaysAndOverlays(docker)).filter((x) => !before.has(x));
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(left, []);
  });

  it('a cell that floods its relay (a process per connection) harms only itself: another cell reaches its host meanwhile (red team)', async () => {
    const web: Server = createServer((_req, res) => res.end('hello-through-proxy'));
    const webPort = await listen(web, '127.0.0.1');
    const flood = [
      'import os, socket, sys, time, urllib.parse',
      'p = urllib.parse.urlparse(os.environ["HTTP_PROXY"])',
      'held = []',
      'for i in range(560):',
      '    try:',
      '        held.append(socket.create_connection((p.hostname, p.port), timeout=0.5))',
      '    except Exception:',
      '        pass',
      'print("held", len(held), flush=True)',
      'print("flooded", flush=True)',
      'time.sleep(60)',
    ].join('\n');
    const stop = new AbortController();
    let seen = '';
    let flooded: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (flooded = resolve));
    try {
      const flooder = provider.run(
        { image: TEST_IMAGES.bookworm, cmd: ['python3', '-c', flood], allow_net: ['localhost'], timeout_s: 180 },
        {
          signal: stop.signal,
          onOutput: (c) => {
            seen += c.toString();
            if (/flooded\n/.test(seen)) flooded();
          },
        },
      );
      await Promise.race([done, flooder.then((r) => assert.fail(`the flooder ended early: ${r.output}`))]);
      const r = await provider.run({
        image: TEST_IMAGES.busybox,
        cmd: `wget -q -O - http://localhost:${webPort}/ && echo`,
        allow_net: ['localhost'],
        timeout_s: 60,
      });
      assert.equal(r.exit_code, 0, `${r.output} (the flooder: ${seen.trim()})`);
      assert.match(r.output, /hello-through-proxy/);
      stop.abort();
      await flooder;
    } finally {
      stop.abort();
      web.close();
    }
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

/** A relay of this process: its address on the egress bridge and where it forwards. */
async function relayContainer(docker: Docker): Promise<{ gateway: string; proxyPort: number; egressIp: string }> {
  const [c] = await docker.listContainers({ filters: { label: ['forge.role=egress-relay', `forge.runner.pid=${process.pid}`] } });
  assert.ok(c, 'no relay container runs');
  const info = await docker.getContainer(c.Id).inspect();
  const cmd = info.Config.Cmd ?? [];
  const egressIp = info.NetworkSettings.Networks['forge-egress']?.IPAddress ?? '';
  return { gateway: cmd[cmd.length - 2]!, proxyPort: Number(cmd[cmd.length - 1]), egressIp };
}

/** The relays and overlays this process's runners made (other runners may share the cluster). */
async function ownRelaysAndOverlays(docker: Docker): Promise<string[]> {
  const mine = `forge.runner.pid=${process.pid}`;
  const relays = await docker.listContainers({ all: true, filters: { label: ['forge.role=egress-relay', mine] } });
  const overlays = await docker.listNetworks({ filters: { driver: ['overlay'], label: ['forge.role=egress-overlay', mine] } });
  return [...relays.map((c) => `relay ${c.Names[0]}`), ...overlays.map((n) => `overlay ${n.Name}`)];
}
