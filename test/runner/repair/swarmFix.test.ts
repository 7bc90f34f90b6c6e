import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { bakeImage } from '../../../runner/src/images/bakeImage.js';
import { FixReportSchema, type FixReport } from '../../../runner/src/protocol/fixReport.js';
import { LABEL_CELL } from '../../../runner/src/cells/dockerContainerSpec.js';
import { TEST_IMAGES } from '../../helpers/docker.js';
import { requireFeature } from '../../helpers/requirement.js';
import { SAMPLES, sampleRepo } from '../../helpers/sampleRepo.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../../helpers/swarm.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
/** The test cluster's workers (scripts/swarm-cluster.sh). */
const WORKER_ROOT = process.env.FORGE_SWARM_ROOT || '/var/lib/forge-swarm';
const workerSocket = (n: number) => join(WORKER_ROOT, `node${n}`, 'docker.sock');

/** A run killed mid-way prints no report. */
function parseReport(stdout: string): FixReport | null {
  try {
    return FixReportSchema.parse(JSON.parse(stdout));
  } catch {
    return null;
  }
}

interface FixRun {
  done: Promise<{ status: number | null; stderr: string; report: FixReport | null }>;
  finished: () => boolean;
  /** Stops a run the test gave up on, so none of its worktrees outlive the test. */
  abort: () => Promise<void>;
}

function fix(repo: string, args: string[]): FixRun {
  const child = spawn(process.execPath, [RUNNER, 'fix', '--repo', repo, '--json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let ended = false;
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done: FixRun['done'] = new Promise((resolve) =>
    child.on('close', (status) => {
      ended = true;
      resolve({ status, stderr, report: parseReport(stdout) });
    }),
  );
  return {
    done,
    finished: () => ended,
    abort: async () => {
      if (ended) return;
      child.kill('SIGTERM');
      await done;
    },
  };
}

const replay = (name: string) => `replay:${join(SAMPLES, name, 'replay.json')}`;
const issue = (name: string) => join(SAMPLES, name, 'issue.md');
const execFileP = promisify(execFile);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Nothing of forge's on the manager (services, configs, secrets, containers) nor on the engines given. */
async function leftovers(docker: Docker, engines: Docker[]): Promise<string[]> {
  const filters = { label: [LABEL_CELL] };
  const left = [
    ...(await docker.listServices({ filters })).map((s) => `service ${s.Spec?.Name}`),
    ...(await docker.listConfigs({ filters })).map((c) => `config ${c.Spec?.Name}`),
    ...(await docker.listSecrets({ filters })).map((s) => `secret ${s.Spec?.Name}`),
  ];
  for (const e of engines) left.push(...(await e.listContainers({ all: true, filters })).map((c) => `container ${c.Names[0]}`));
  return left;
}

async function eventuallyClean(docker: Docker, engines: Docker[]): Promise<void> {
  let left: string[] = [];
  for (let i = 0; i < 120; i++) {
    left = await leftovers(docker, engines);
    if (left.length === 0) return;
    await delay(500);
  }
  assert.deepEqual(left, [], 'swarm cells left behind');
}

describe('forge-runner fix on a Docker Swarm (3 nodes, replay model)', function () {
  this.timeout(600_000);
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  const engines = [docker, new Docker({ socketPath: workerSocket(2) }), new Docker({ socketPath: workerSocket(3) })];
  let image = '';

  before(async function () {
    const why = await swarmUnavailable(3);
    requireFeature(this, why === null, why ?? '');
    requireFeature(this, existsSync(RUNNER), `${RUNNER} is missing; run npm run build`);
    requireFeature(
      this,
      existsSync(workerSocket(2)),
      `the test cluster's worker engines are not at ${WORKER_ROOT}; run scripts/swarm-cluster.sh up`,
    );
    // The sample's toolchain (python3) baked into an image on the manager, as users do.
    const repo = sampleRepo('py-calc');
    try {
      image = (await bakeImage(docker, { repo: repo.dir, base: TEST_IMAGES.bookworm })).image;
    } finally {
      repo.cleanup();
    }
  });

  it('py-calc with K=6: fixed, the right winner, cells on at least two nodes, nothing left behind', async () => {
    const repo = sampleRepo('py-calc');
    try {
      const args = ['--provider', 'swarm', '--registry', TEST_SWARM_REGISTRY, '--image', image, '--attempts', '6'];
      const r = await fix(repo.dir, [...args, '--issue-file', issue('py-calc'), '--model', replay('py-calc')]).done;
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.report!.provider, 'swarm');
      assert.equal(r.report!.status, 'fixed');
      assert.ok(r.report!.winner!.attempts[0]!.endsWith('-a0'), JSON.stringify(r.report!.winner));
      const nodes = new Set((r.report!.cell_nodes ?? []).map((c) => c.node));
      assert.ok(nodes.size >= 2, `cells ran on ${[...nodes].join(', ')}`);
      assert.equal(r.report!.cell_nodes!.length, r.report!.cells, 'every cell names its node');
      await eventuallyClean(docker, engines);
    } finally {
      repo.cleanup();
    }
  });

  it("a worker's dockerd stopped while its cells run: the run still finishes with the right winner, the lost cells ran again elsewhere, nothing is left anywhere", async () => {
    const pidFile = join(WORKER_ROOT, 'node2', 'dockerd.pid');
    const node2 = (await engines[1]!.info()) as { Swarm: { NodeID: string } };
    // The other nodes are paused until a cell lands on node2: the scheduler's spread alone need
    // not pick node2 before a short run ends.
    const others = ((await docker.listNodes()) as { ID: string }[]).filter((n) => n.ID !== node2.Swarm.NodeID);
    const setAvailability = async (availability: 'pause' | 'active') => {
      for (const n of others) await execFileP('docker', ['node', 'update', '--availability', availability, n.ID]);
    };
    const repo = sampleRepo('py-calc');
    let run: FixRun | null = null;
    try {
      await setAvailability('pause');
      const args = ['--provider', 'swarm', '--registry', TEST_SWARM_REGISTRY, '--image', image, '--attempts', '6'];
      run = fix(repo.dir, [...args, '--issue-file', issue('py-calc'), '--model', replay('py-calc')]);
      let stopped = false;
      while (!stopped && !run.finished()) {
        const tasks = (await docker.listTasks({ filters: { 'desired-state': ['running'] } })) as {
          NodeID?: string;
          Status?: { State?: string };
        }[];
        if (
          tasks.some(
            (t) => t.NodeID === node2.Swarm.NodeID && ['assigned', 'preparing', 'starting', 'running'].includes(t.Status?.State ?? ''),
          )
        ) {
          await setAvailability('active');
          process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
          stopped = true;
        } else await delay(100);
      }
      const r = await run.done;
      assert.ok(stopped, `the run ended before any cell was placed on node2 (exit ${r.status}): ${r.stderr.slice(-2000)}`);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.report!.status, 'fixed');
      assert.ok(r.report!.winner!.attempts[0]!.endsWith('-a0'), JSON.stringify(r.report!.winner));
      const resubmitted = (r.report!.cell_nodes ?? []).filter((c) => /resubmitted after/.test(c.node));
      assert.ok(resubmitted.length >= 1, `no cell says it was resubmitted: ${JSON.stringify(r.report!.cell_nodes)}`);
    } finally {
      await run?.abort();
      await setAvailability('active');
      repo.cleanup();
      // The worker comes back (same data root, same node): it removes the containers of services gone meanwhile.
      const up = spawn('bash', ['scripts/swarm-cluster.sh', 'up'], { stdio: 'ignore' });
      await new Promise((res) => up.on('close', res));
    }
    await eventuallyClean(docker, engines);
  });
});
