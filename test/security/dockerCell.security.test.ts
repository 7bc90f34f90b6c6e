import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import Docker from 'dockerode';
import { statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { DockerCellProvider, listForgeContainers } from '../../runner/src/cells/providers/dockerCellProvider.js';
import { dockerUnavailable, TEST_IMAGES } from '../helpers/docker.js';
import { git, makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

describe('docker cell security (each test tries to break one claim)', function () {
  this.timeout(120_000);
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  let provider: DockerCellProvider;
  const image = TEST_IMAGES.busybox;

  before(async function () {
    const why = await dockerUnavailable(image);
    requireFeature(this, why === null, why ?? '');
    provider = new DockerCellProvider();
  });
  after(async () => provider?.drain());

  it('network none: only loopback inside, and a host listener on the bridge gateway is unreachable', async () => {
    const server: Server = createServer((s) => s.end('hello-from-host\n'));
    await new Promise<void>((res) => server.listen(0, '0.0.0.0', res));
    const port = (server.address() as { port: number }).port;
    // The host as a bridged container sees it: its default gateway (none exists without a network).
    const probe = `gw=$(ip route | awk '/^default/ {print $3}'); nc -w 3 \${gw:-172.17.0.1} ${port} </dev/null`;
    try {
      // Positive control: an ordinary container on the default bridge reaches the listener.
      const c = await docker.createContainer({ Image: image, Cmd: ['sh', '-c', probe], Tty: true, Labels: { 'forge.test': 'control' } });
      await c.start();
      await c.wait();
      const controlOut = String(await c.logs({ stdout: true, stderr: true }));
      await c.remove({ force: true });
      assert.match(controlOut, /hello-from-host/, 'control failed: even a bridged container cannot reach the listener');
      const r = await provider.run({ image, cmd: `cat /proc/net/dev; ${probe}; echo rc=$?` });
      assert.doesNotMatch(r.output, /hello-from-host/);
      assert.doesNotMatch(r.output, /eth0/);
      assert.match(r.output, /\blo:/);
    } finally {
      server.close();
    }
  });

  it('no capabilities, no new privileges, no docker socket', async () => {
    const r = await provider.run({
      image,
      cmd: 'grep -E "^(CapEff|CapPrm|NoNewPrivs)" /proc/self/status; test -S /var/run/docker.sock && echo SOCKET; ls /var/run 2>&1; true',
    });
    assert.match(r.output, /CapEff:\s+0000000000000000/);
    assert.match(r.output, /CapPrm:\s+0000000000000000/);
    assert.match(r.output, /NoNewPrivs:\s+1/);
    assert.doesNotMatch(r.output, /SOCKET|docker\.sock/);
  });

  it('never runs as root: a root runner runs cells as the cell user, files come back owned by it', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const root = process.getuid?.() === 0;
    const expected = root ? [65532, 65532] : [process.getuid!(), process.getgid!()];
    try {
      const r = await provider.run({ image, worktree: repo.dir, cmd: 'id -u; id -g; echo made > made.txt' });
      assert.equal(r.output, `${expected[0]}\n${expected[1]}\n`);
      assert.match(r.isolation.user, new RegExp(`^uid ${expected[0]} gid ${expected[1]}`));
      const st = statSync(join(repo.dir, 'made.txt'));
      assert.deepEqual([st.uid, st.gid], expected);
    } finally {
      repo.cleanup();
    }
  });

  it('the worktree .git is read-only inside the cell', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    // Writable by the cell user, so only the read-only mount stands in the way.
    if (process.getuid?.() === 0) spawnSync('chmod', ['-R', 'a+rwX', join(repo.dir, '.git')]);
    try {
      const cmd = 'echo "[core] fsmonitor = touch /tmp/x" >> .git/config; echo rc=$?; echo ok > a.txt';
      const r = await provider.run({ image, worktree: repo.dir, capture_diff: false, cmd });
      assert.match(r.output, /Read-only file system/);
      assert.equal(git(repo.dir, 'status', '--porcelain').trim(), 'M a.txt');
      // With diff capture git data others can write is refused before the cell (the diff reads it by name).
      if (process.getuid?.() === 0)
        await assert.rejects(provider.run({ image, worktree: repo.dir, cmd }), /\.git is writable by other users/);
    } finally {
      repo.cleanup();
    }
  });

  it('memory hog: killed with killed_by=memory', async () => {
    // The shell holds 200 MB in a variable: far over the 64 MiB limit.
    const r = await provider.run({
      image,
      cmd: 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo ${#x}',
      limits: { memory_mib: 64 },
      timeout_s: 60,
    });
    assert.equal(r.killed_by, 'memory', `exit ${r.exit_code}: ${r.output}`);
  });

  it('fork bomb: contained by the pids limit', async () => {
    const r = await provider.run({ image, cmd: 'bomb() { bomb | bomb & }; bomb; sleep 2', limits: { pids: 32 }, timeout_s: 5 });
    assert.ok(r.duration_ms < 30_000);
    const t = Date.now();
    await provider.run({ image, cmd: 'true' });
    assert.ok(Date.now() - t < 10_000, 'the engine was unresponsive after the fork bomb');
  });

  it('timeouts and cancellations leave no container behind', async () => {
    await provider.run({ image, cmd: 'sleep 60', timeout_s: 1 });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 500);
    await provider.run({ image, cmd: 'sleep 60' }, { signal: abort.signal });
    await provider.drain();
    const mine = (await listForgeContainers(docker)).filter((c) => c.Labels['forge.runner.pid'] === String(process.pid));
    assert.deepEqual(
      mine.map((c) => c.Names[0]),
      [],
    );
  });
});
