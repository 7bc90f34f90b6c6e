import assert from 'node:assert/strict';
import Docker from 'dockerode';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { leaseFileName, leaseRegistryTag } from '../../../runner/src/cells/swarm/registryLeases.js';
import { pushLabels } from '../../../runner/src/cells/swarm/registryOwnership.js';
import { writeTar } from '../../../runner/src/cells/swarm/tarArchive.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { SwarmImageRecords } from '../../../runner/src/store/swarmImageRecords.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

/** The pid of a process that has certainly exited. */
function deadPid(): number {
  return Number(String(spawnSync('sh', ['-c', 'echo $$']).stdout).trim());
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

async function follow(docker: Docker, stream: NodeJS.ReadableStream, what: string): Promise<void> {
  const events = await new Promise<Record<string, unknown>[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: Record<string, unknown>[]) => (err ? reject(err) : resolve(out))),
  );
  const failed = events.find((e) => e.error || e.errorDetail);
  if (failed) throw new Error(`${what}: ${String(failed.error ?? JSON.stringify(failed.errorDetail))}`);
}

/**
 * gc against a registry of its own (Debian's docker-registry, deletes enabled), holding real
 * images pushed through the local engine with the labels runners put on theirs: a gone
 * runner's input and dependency images go, a live runner's stay, and so do a dependency image
 * a live runner of the same state directory leases and every base image.
 */
describe('forge-runner gc: the swarm registry', function () {
  this.timeout(300_000);
  let registry: ChildProcess | null = null;
  let dir = '';
  const pushed: string[] = [];
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });

  after(async () => {
    for (const t of pushed)
      await docker
        .getImage(t)
        .remove({ force: true })
        .catch(() => undefined);
    if (registry?.pid) {
      registry.kill('SIGTERM');
      await new Promise((r) => (registry!.exitCode !== null ? r(null) : registry!.once('exit', r)));
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("removes a gone runner's input and unused dependency tags, leaves live, leased and base ones, and names them", async function () {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    requireFeature(this, why === null, why ?? '');
    const binary = spawnSync('sh', ['-c', 'command -v docker-registry']).status === 0;
    requireFeature(this, binary, 'docker-registry is not installed: apt-get install docker-registry');

    dir = mkdtempSync(join(tmpdir(), 'forge-registry-gc-'));
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    writeFileSync(
      join(dir, 'config.yml'),
      `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\n  delete:\n    enabled: true\nhttp:\n  addr: ${address}\n`,
    );
    registry = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let registryLog = '';
    registry.stderr!.on('data', (d: Buffer) => (registryLog = (registryLog + d.toString()).slice(-4000)));
    const deadline = Date.now() + 15_000;
    for (;;) {
      const up = await fetch(`http://${address}/v2/`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline || registry.exitCode !== null)
        throw new Error(`the test registry did not answer on ${address}: ${registryLog}`);
      await new Promise((r) => setTimeout(r, 200));
    }

    const stateDir = process.env.FORGE_STATE_DIR!;
    const dead = deadPid();
    const host = hostname();
    /** Builds a tiny image as a runner would label it and pushes it; its digest. */
    const push = async (repository: string, tag: string, owner: { pid: number; stateDir: string } | null): Promise<string> => {
      const ref = `${address}/${repository}:${tag}`;
      const now = Math.floor(Date.now() / 1000);
      const context = writeTar([
        { name: 'Dockerfile', type: 'file', mode: 0o644, uid: 0, gid: 0, mtime: now, data: Buffer.from(`FROM ${TEST_IMAGES.busybox}\n`) },
      ]);
      // A label of its own makes each image (and so each manifest) distinct.
      const labels = { 'forge.test.tag': `${repository}:${tag}`, ...(owner ? pushLabels({ ...owner, host }) : {}) };
      await follow(
        docker,
        await docker.buildImage(Readable.from([context]), { t: ref, rm: true, forcerm: true, labels }),
        `building ${ref}`,
      );
      pushed.push(ref);
      await follow(docker, await docker.getImage(ref).push({ authconfig: { serveraddress: address } }), `pushing ${ref}`);
      const r = await fetch(`http://${address}/v2/${repository}/manifests/${tag}`, {
        method: 'HEAD',
        headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' },
      });
      return r.headers.get('docker-content-digest')!;
    };
    const goneRunner = { pid: dead, stateDir };
    const liveRunner = { pid: process.pid, stateDir };
    await push('forge-cell-input', 'gone', goneRunner);
    await push('forge-cell-input', 'live', liveRunner);
    await push('forge-cell-input', 'unlabelled', null);
    const goneDeps = await push('forge-cell-deps', 'gone', goneRunner);
    await push('forge-cell-deps', 'leased', goneRunner);
    await push('forge-cell-deps', 'live', liveRunner);
    await push('forge-cell-deps', 'other-state', { pid: dead, stateDir: join(dir, 'another-state') });
    await push('forge-cell-base', 'gone', goneRunner);
    // A live runner of this state directory uses deps:leased (taken from the store by digest);
    // a gone one's lease protects nothing, and its file goes.
    leaseRegistryTag(stateDir, { pid: process.pid, host }, address, 'forge-cell-deps', 'leased');
    leaseRegistryTag(stateDir, { pid: dead, host }, address, 'forge-cell-deps', 'gone');
    const db = openStore(join(stateDir, 'forge.db'));
    new SwarmImageRecords(db).record(address, 'forge-cell-deps', 'gone', goneDeps);
    db.close();

    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      // Not the machine's swarm: this test's registry only (a manager that does not answer is a note).
      const gc = (...extra: string[]) =>
        execFileSync(
          process.execPath,
          [RUNNER, 'gc', '--repo', repo.dir, '--registry', address, '--docker-host', `unix://${join(dir, 'no-manager.sock')}`, ...extra],
          { encoding: 'utf8', env: { ...process.env, FORGE_SWARM_REGISTRY: '' } },
        );
      const tags = async (repository: string) =>
        ((await (await fetch(`http://${address}/v2/${repository}/tags/list`)).json()) as { tags: string[] | null }).tags ?? [];

      const dry = gc('--dry-run');
      assert.match(dry, /^registry: would remove forge-cell-input:gone \(runner \d+@\S+ gone\)$/m);
      assert.match(dry, /^registry: 2 tags to remove$/m);
      assert.deepEqual((await tags('forge-cell-input')).sort(), ['gone', 'live', 'unlabelled'], '--dry-run removed a tag');

      const out = gc();
      assert.match(out, new RegExp(`^registry: removed forge-cell-input:gone \\(runner ${dead}@${host} gone\\)$`, 'm'));
      assert.match(
        out,
        new RegExp(`^registry: removed forge-cell-deps:gone \\(runner ${dead}@${host} gone; no live runner or service uses it\\)$`, 'm'),
      );
      assert.match(out, /^registry: left forge-cell-input:live \(runner \d+@\S+ is alive\)$/m);
      assert.match(out, /^registry: left forge-cell-deps:leased \(in use by live runner \d+/m);
      assert.match(out, /^registry: left forge-cell-deps:other-state \(.*another state directory/m);
      assert.match(out, /^registry: left forge-cell-input:unlabelled \(no forge-runner labels/m);
      assert.match(out, /^registry: 2 tags removed$/m);
      assert.match(out, /^note: registry 127\.0\.0\.1:\d+: 1 forge-cell-base tag\(s\) left/m);
      assert.match(out, /garbage-collect/);

      assert.deepEqual((await tags('forge-cell-input')).sort(), ['live', 'unlabelled']);
      assert.deepEqual((await tags('forge-cell-deps')).sort(), ['leased', 'live', 'other-state']);
      assert.deepEqual(await tags('forge-cell-base'), ['gone']);
      assert.equal(existsSync(join(stateDir, 'registry-leases', leaseFileName(dead, host))), false, "a gone runner's lease file stays");
      assert.ok(existsSync(join(stateDir, 'registry-leases', leaseFileName(process.pid, host))), "a live runner's lease file went");
      const after = openStore(join(stateDir, 'forge.db'));
      assert.deepEqual(
        new SwarmImageRecords(after).digests(address, 'forge-cell-deps', 'gone'),
        [],
        'the store still records a deleted digest',
      );
      after.close();

      // Nothing left to remove: a second run removes nothing.
      assert.match(gc(), /^registry: 0 tags removed$/m);
    } finally {
      repo.cleanup();
    }
  });
});
