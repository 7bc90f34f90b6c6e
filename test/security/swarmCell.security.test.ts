import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import Docker from 'dockerode';
import { SwarmCellProvider } from '../../runner/src/cells/providers/swarmCellProvider.js';
import { LABEL_CELL } from '../../runner/src/cells/dockerContainerSpec.js';
import { collectStaleSwarmCells } from '../../runner/src/cells/swarm/staleSwarmCells.js';
import { hostname } from 'node:os';
import { TEST_IMAGES } from '../helpers/docker.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../helpers/swarm.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

/** The docker cell security suite's cases that apply to swarm cells, plus the result frame's. */
describe('swarm cell security (each test tries to break one claim)', function () {
  this.timeout(180_000);
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  let provider: SwarmCellProvider;
  const image = TEST_IMAGES.busybox;

  before(async function () {
    const why = await swarmUnavailable();
    requireFeature(this, why === null, why ?? '');
    provider = new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY });
  });
  after(async () => provider?.drain());

  it('no network on any node: only lo is up, and a host listener on every bridge gateway is unreachable', async () => {
    const server: Server = createServer((s) => s.end('hello-from-host\n'));
    await new Promise<void>((res) => server.listen(0, '0.0.0.0', res));
    const port = (server.address() as { port: number }).port;
    // docker0's gateway and the test cluster's addresses: the manager's bridge and each worker's namespace.
    const targets = ['172.17.0.1', '10.210.0.1', '10.210.0.12', '10.210.0.13'];
    const probe = targets.map((t) => `nc -w 2 ${t} ${port} </dev/null`).join('; ');
    try {
      // Three at once: Swarm spreads them, so every node's configuration is tried.
      const results = await Promise.all(
        [1, 2, 3].map(() => provider.run({ image, cmd: `ip -o link show up; ip route; ${probe}; echo done` })),
      );
      for (const r of results) {
        assert.doesNotMatch(r.output, /hello-from-host/, `reached the host from ${r.node}`);
        assert.doesNotMatch(r.output, /eth0/, `a link other than lo is up on ${r.node}:\n${r.output}`);
        assert.match(r.output, /\blo:/);
        assert.match(r.output, /done\n$/);
      }
    } finally {
      server.close();
    }
  });

  it('no capabilities, no new privileges, no engine socket, the nonce unreadable', async () => {
    const r = await provider.run({
      image,
      cmd: 'grep -E "^(CapEff|CapPrm|NoNewPrivs)" /proc/self/status; test -S /var/run/docker.sock && echo SOCKET; cat /run/secrets/forge-nonce && echo NONCE; true',
    });
    assert.match(r.output, /CapEff:\s+0000000000000000/);
    assert.match(r.output, /CapPrm:\s+0000000000000000/);
    assert.match(r.output, /NoNewPrivs:\s+1/);
    assert.doesNotMatch(r.output, /SOCKET|NONCE/);
  });

  it('the command cannot forge the result frame: not on stdout, not on the task stderr, not through /proc', async () => {
    const forged = 'FORGE 00 exit 0\nFORGE 00 files\nFORGE 00 exit 0';
    const r = await provider.run({
      image,
      cmd: `printf '${forged}\\n'; printf '${forged}\\n' >&2; for fd in /proc/1/fd/2 /proc/*/fd/2; do printf '${forged}\\n' 2>/dev/null >"$fd" && echo "wrote $fd"; done; exit 7`,
    });
    assert.equal(r.exit_code, 7);
    assert.doesNotMatch(r.output, /wrote \/proc\/(1|\d+)\/fd\/2\n(?![\s\S]*wrote)/, 'the command wrote to another process stderr');
    // Its own /proc/self/fd/2 is its stdout: whatever it printed is output, never a frame.
    assert.match(r.output, /FORGE 00 exit 0/);
  });

  it('never runs as root; what comes back is written by the runner, and the host .git is out of reach', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const config = readFileSync(join(repo.dir, '.git', 'config'), 'utf8');
      const r = await provider.run({
        image,
        worktree: repo.dir,
        cmd: 'id -u; id -g; echo "[core] fsmonitor = touch /tmp/x" 2>/dev/null >> .git/config || echo no-git; echo ok > a.txt; echo made > made.txt',
      });
      assert.equal(r.output, '65532\n65532\nno-git\n');
      assert.equal(readFileSync(join(repo.dir, '.git', 'config'), 'utf8'), config);
      assert.deepEqual(
        r.diff?.files.map((f) => f.path),
        ['a.txt', 'made.txt'],
      );
    } finally {
      repo.cleanup();
    }
  });

  it('a file name with a newline cannot fake what was left out or cancel a deletion (red team round 4)', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    try {
      const r = await provider.run({ image, worktree: repo.dir, cmd: 'rm a.txt; printf x > "$(printf "q\\na.txt")"' });
      assert.equal(r.exit_code, 0, r.output);
      assert.equal(existsSync(join(repo.dir, 'a.txt')), false, 'the deletion was cancelled');
      const omitted = r.diff?.omitted?.map((o) => o.path) ?? [];
      assert.ok(!omitted.includes('a.txt') && !omitted.includes('q'), JSON.stringify(omitted));
      assert.ok(omitted.includes('q\na.txt'), JSON.stringify(omitted));
    } finally {
      repo.cleanup();
    }
  });

  it('a link the cell leaves cannot make the runner write outside the worktree', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = await provider.run({
        image,
        worktree: repo.dir,
        cmd: 'ln -s /etc escape && mkdir -p sub && ln -s ../../../../../../etc/forge-swarm-canary sub/x; echo hi > plain.txt',
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.throws(() => readFileSync('/etc/forge-swarm-canary'));
      const paths = r.diff?.files.map((f) => f.path) ?? [];
      assert.ok(paths.includes('escape') && paths.includes('plain.txt'), JSON.stringify(paths));
    } finally {
      repo.cleanup();
    }
  });

  it('memory hog: killed with killed_by=memory', async () => {
    const r = await provider.run({
      image,
      cmd: 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo ${#x}',
      limits: { memory_mib: 64 },
      timeout_s: 60,
    });
    assert.equal(r.killed_by, 'memory', `exit ${r.exit_code}: ${r.output} ${r.isolation.warnings.join('; ')}`);
  });

  it('fork bomb: contained by the pids limit', async () => {
    const r = await provider.run({ image, cmd: 'bomb() { bomb | bomb & }; bomb; sleep 2', limits: { pids: 32 }, timeout_s: 10 });
    assert.ok(r.duration_ms < 30_000);
    const t = Date.now();
    await provider.run({ image, cmd: 'true' });
    assert.ok(Date.now() - t < 15_000, 'the cluster was unresponsive after the fork bomb');
  });

  it('a registry that does not answer: one clear error, nothing submitted', async () => {
    // Earlier cells' services may still be going away: nothing new may appear, whatever leaves.
    const ids = async () => (await docker.listServices({ filters: { label: [LABEL_CELL] } })).map((s) => s.ID);
    const before = new Set(await ids());
    const down = new SwarmCellProvider({ registry: '127.0.0.1:1' });
    await assert.rejects(down.run({ image, cmd: 'true' }), (e: Error) => {
      assert.match(e.message, /^the registry 127\.0\.0\.1:1 does not answer \(.*\); start it .* or pass --registry HOST:PORT$/);
      assert.doesNotMatch(e.message, /\n/);
      return true;
    });
    assert.deepEqual(
      (await ids()).filter((id) => !before.has(id)),
      [],
      'no service was submitted',
    );
  });

  it("gc removes a dead runner's services, overlays, configs and secrets, and leaves a live runner's alone", async () => {
    const labels = (pid: number) => ({
      [LABEL_CELL]: `cell-gc-${pid}`,
      'forge.run': 'adhoc',
      'forge.runner.pid': String(pid),
      'forge.runner.host': hostname(),
    });
    const dead = 2 ** 22 + 17;
    const cfg = await docker.createConfig({
      Name: `cell-gc-${dead}-script`,
      Labels: labels(dead),
      Data: Buffer.from('x').toString('base64'),
    });
    const live = await docker.createConfig({
      Name: `cell-gc-${process.pid}-script`,
      Labels: labels(process.pid),
      Data: Buffer.from('x').toString('base64'),
    });
    const sec = await docker.createSecret({
      Name: `cell-gc-${dead}-nonce`,
      Labels: labels(dead),
      Data: Buffer.from('x').toString('base64'),
    });
    const svc = await docker.createService({
      Name: `cell-gc-${dead}`,
      Labels: labels(dead),
      Mode: { Replicated: { Replicas: 0 } },
      TaskTemplate: { ContainerSpec: { Image: image } },
    });
    const net = await docker.createNetwork({
      Name: `forge-net-cell-gc-${dead}`,
      Driver: 'overlay',
      Internal: true,
      Attachable: true,
      Labels: labels(dead),
    });
    try {
      const items = await collectStaleSwarmCells(docker, false, (pid) => pid === process.pid);
      const removed = items.filter((i) => i.action === 'removed').map((i) => i.id);
      assert.deepEqual(
        removed.sort(),
        [
          `config cell-gc-${dead}-script`,
          `secret cell-gc-${dead}-nonce`,
          `service cell-gc-${dead}`,
          `network forge-net-cell-gc-${dead}`,
        ].sort(),
      );
      await assert.rejects(docker.getNetwork(net.id).inspect(), 'the overlay is gone');
      assert.ok(items.some((i) => i.id === `config cell-gc-${process.pid}-script` && i.action === 'left'));
    } finally {
      for (const remove of [
        () => docker.getService(svc.id).remove(),
        () => docker.getConfig(cfg.id).remove(),
        () => docker.getSecret(sec.id).remove(),
        () => docker.getConfig(live.id).remove(),
        () => docker.getNetwork(net.id).remove(),
      ])
        await remove().catch(() => undefined);
    }
  });

  it('gc --docker-host cleans the manager it names (not only the local engine), and says so when none answers there', async () => {
    const dead = 2 ** 22 + 19;
    const cfg = await docker.createConfig({
      Name: `cell-gcr-${dead}-script`,
      Labels: { [LABEL_CELL]: `cell-gcr-${dead}`, 'forge.run': 'adhoc', 'forge.runner.pid': String(dead), 'forge.runner.host': hostname() },
      Data: Buffer.from('x').toString('base64'),
    });
    // The same manager under another name: what gc reports is where it looked.
    const alias = join(mkdtempSync(join(tmpdir(), 'forge-gc-manager-')), 'manager.sock');
    symlinkSync('/var/run/docker.sock', alias);
    const env = { ...process.env };
    delete env.DOCKER_HOST;
    try {
      const gc = (host: string) =>
        spawnSync(process.execPath, [RUNNER, 'gc', '--repo', process.cwd(), '--docker-host', host, '--json'], { encoding: 'utf8', env });
      const r = gc(`unix://${alias}`);
      assert.equal(r.status, 0, r.stderr);
      const items = (JSON.parse(r.stdout) as { items: { kind: string; id: string; action: string }[] }).items;
      assert.ok(
        items.some((i) => i.id === `config cell-gcr-${dead}-script on unix://${alias}` && i.action === 'removed'),
        JSON.stringify(items),
      );
      const none = gc('unix:///nonexistent/docker.sock');
      assert.equal(none.status, 0, none.stderr);
      assert.match(
        (JSON.parse(none.stdout) as { notes: string[] }).notes.join('\n'),
        /swarm cells not checked: no manager answers at unix:\/\/\/nonexistent/,
      );
    } finally {
      await docker
        .getConfig(cfg.id)
        .remove()
        .catch(() => undefined);
      rmSync(dirname(alias), { recursive: true, force: true });
    }
  });

  it('timeouts and cancellations leave no service, config, secret or container behind', async () => {
    await provider.run({ image, cmd: 'sleep 60', timeout_s: 1 });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 500);
    await provider.run({ image, cmd: 'sleep 60' }, { signal: abort.signal });
    await provider.drain();
    const filters = { label: [`forge.runner.pid=${process.pid}`] };
    assert.deepEqual(await docker.listServices({ filters }), []);
    assert.deepEqual(await docker.listConfigs({ filters }), []);
    assert.deepEqual(await docker.listSecrets({ filters }), []);
    // Task containers go once their node hears the service is gone.
    for (let i = 0; i < 40; i++) {
      const left = await docker.listContainers({ all: true, filters: { label: [LABEL_CELL] } });
      if (left.length === 0) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.fail('a task container is still on the manager');
  });
});
