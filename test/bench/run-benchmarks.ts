// `npm run bench`: speed targets live here, never in timed tests. Every figure is a ratio of
// variants measured side by side in this one run; absolute times on shared machines are noise.
import Docker from 'dockerode';
import { TEST_IMAGES } from '../helpers/docker.js';
import { benchDockerCells } from './dockerCellOverhead.js';
import { benchSwarmCells } from './swarmCellOverhead.js';
import { SwarmCellProvider } from '../../runner/src/cells/providers/swarmCellProvider.js';
import { benchHostCellOverhead, type BenchLine } from './hostCellOverhead.js';
import { benchWorktreeCreation } from './worktreeCreation.js';
import { benchDiffCapture } from './diffCapture.js';
import { benchSharedDependencies } from './sharedDependencies.js';
import { benchFixIsolation, benchFixScaling } from './fixPipeline.js';
import { benchQemuCells } from './qemuCellOverhead.js';
import { benchExtensionStartup } from './extensionStartup.js';
import { benchCliStartup } from './cliStartup.js';
import { findQemuTools } from '../../runner/src/cells/qemu/qemuRuntime.js';
import { benchTimeToVerdict, TIME_TO_VERDICT_PROJECTS } from './timeToVerdict.js';

const DOCKER_BENCH_IMAGE = process.env.FORGE_BENCH_IMAGE ?? 'forge-test/busybox:1';

const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 40;
const json = process.argv.includes('--json');

async function main(): Promise<void> {
  const suites: Record<string, { rounds: number; lines: BenchLine[] }> = {};
  if (process.argv.includes('--only-extension')) {
    suites['extension startup'] = { rounds: 10, lines: await benchExtensionStartup(10) };
    return report(suites);
  }
  if (process.argv.includes('--only-cli')) {
    const image = (await dockerImageReady(DOCKER_BENCH_IMAGE)) ? DOCKER_BENCH_IMAGE : null;
    if (!image) console.error(`CLI startup: docker cell skipped, no engine or no image ${DOCKER_BENCH_IMAGE}`);
    const cliRounds = runsArg > 0 ? runs : 15;
    suites['CLI startup (dist/runner.js)'] = { rounds: cliRounds, lines: await benchCliStartup(cliRounds, image) };
    return report(suites);
  }
  if (process.argv.includes('--only-qemu')) {
    const tools = findQemuTools();
    if ('missing' in tools) throw new Error(`qemu cells: ${tools.missing}`);
    const image = (await dockerImageReady(DOCKER_BENCH_IMAGE)) ? DOCKER_BENCH_IMAGE : null;
    const rounds = runsArg > 0 ? runs : 5;
    const q = await benchQemuCells(tools, rounds, image);
    suites[`qemu cells, accelerator ${q.accelerator}`] = { rounds, lines: q.lines };
    return report(suites);
  }
  if (process.argv.includes('--only-swarm')) {
    await swarmSuite(suites, true);
    return report(suites);
  }
  if (process.argv.includes('--only-deps')) {
    suites['shared dependencies'] = { rounds: 10, lines: await benchSharedDependencies(2_000, 200, 10) };
    return report(suites);
  }
  if (process.argv.includes('--only-verdict')) {
    const rounds = runsArg > 0 ? runs : 1;
    suites['time to verdict (host cells)'] = { rounds, lines: benchTimeToVerdict(TIME_TO_VERDICT_PROJECTS, rounds, 'host') };
    if (!process.argv.includes('--host-only'))
      suites['time to verdict (docker cells)'] = {
        rounds,
        // The test image has npm and go, not pnpm: the pnpm project is measured on host cells only.
        lines: benchTimeToVerdict(
          TIME_TO_VERDICT_PROJECTS.filter((p) => !p.startsWith('pnpm-')),
          rounds,
          'docker',
          TEST_IMAGES.bookworm,
        ),
      };
    return report(suites);
  }
  if (process.argv.includes('--only-diff')) {
    suites['diff capture'] = { rounds: 10, lines: await benchDiffCapture(20_000, 1_000, 10) };
    return report(suites);
  }
  console.error('extension startup: activation and runner spawn-to-ready, 10 rounds...');
  suites['extension startup'] = { rounds: 10, lines: await benchExtensionStartup(10) };
  console.error(`host cell overhead: ${runs} interleaved runs of each variant...`);
  suites['host cell overhead'] = { rounds: runs, lines: await benchHostCellOverhead(runs) };
  console.error('worktree creation: 20,000-file repository...');
  // Each checkout of 20,000 files takes seconds: fewer rounds.
  const worktreeRounds = Math.max(5, Math.floor(runs / 8));
  suites['worktree creation'] = { rounds: worktreeRounds, lines: await benchWorktreeCreation(20_000, worktreeRounds) };
  console.error('shared dependencies: 2,000-file repository, 200-package node_modules...');
  suites['shared dependencies'] = { rounds: worktreeRounds, lines: await benchSharedDependencies(2_000, 200, worktreeRounds) };
  console.error('diff capture: 20,000-file worktree, 1,000 changed files...');
  suites['diff capture'] = { rounds: worktreeRounds, lines: await benchDiffCapture(20_000, 1_000, worktreeRounds) };
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  const dockerReady = await dockerImageReady(DOCKER_BENCH_IMAGE);
  console.error('CLI startup: dist/runner.js --version, one-shot host and docker cells...');
  const cliRounds = Math.max(10, Math.floor(runs / 3));
  suites['CLI startup (dist/runner.js)'] = {
    rounds: cliRounds,
    lines: await benchCliStartup(cliRounds, dockerReady ? DOCKER_BENCH_IMAGE : null),
  };
  if (dockerReady) {
    console.error(`docker cells (${DOCKER_BENCH_IMAGE})...`);
    const dockerRounds = Math.max(15, Math.floor(runs / 2));
    suites['docker cells'] = { rounds: dockerRounds, lines: await benchDockerCells(DOCKER_BENCH_IMAGE, dockerRounds) };
  }
  console.error('fix pipeline: host cells vs isolation off...');
  suites['fix pipeline isolation'] = { rounds: 5, lines: await benchFixIsolation(5) };
  const toolchainImage = process.env.FORGE_BENCH_TOOLCHAIN_IMAGE ?? 'forge-test/bookworm:3';
  if (
    dockerReady &&
    (await docker
      .getImage(toolchainImage)
      .inspect()
      .then(
        () => true,
        () => false,
      ))
  ) {
    console.error(`fix pipeline: K=1,2,4,8 on docker cells (${toolchainImage})...`);
    suites['fix pipeline scaling'] = { rounds: 3, lines: await benchFixScaling(toolchainImage, 3) };
  } else {
    console.error(`fix pipeline scaling: skipped, no engine or no image ${toolchainImage}`);
  }
  await swarmSuite(suites, process.argv.includes('--swarm-30s'));
  const qemuTools = findQemuTools();
  if ('missing' in qemuTools) {
    console.error(`qemu cells: skipped, ${qemuTools.missing}`);
  } else {
    const qemuRounds = Math.max(5, Math.floor(runs / 6));
    console.error(`qemu cells: ${qemuRounds} interleaved pairs (each boots a VM)...`);
    const q = await benchQemuCells(qemuTools, qemuRounds, dockerReady ? DOCKER_BENCH_IMAGE : null);
    suites[`qemu cells, accelerator ${q.accelerator}`] = { rounds: qemuRounds, lines: q.lines };
  }
  if (!dockerReady) {
    console.error(
      `docker cells: skipped, no engine or no image ${DOCKER_BENCH_IMAGE} (scripts/ensure-dockerd.sh, scripts/build-test-images.sh)`,
    );
  }
  report(suites);
}

/** Swarm cells on the cluster DOCKER_HOST names (the test cluster: scripts/swarm-cluster.sh up), when there is one. */
async function swarmSuite(suites: Record<string, { rounds: number; lines: BenchLine[] }>, long: boolean): Promise<void> {
  const registry = process.env.FORGE_SWARM_REGISTRY || '127.0.0.1:5000';
  const health = await new SwarmCellProvider({ registry }).health();
  if (!health.available || !(await dockerImageReady(DOCKER_BENCH_IMAGE))) {
    console.error(`swarm cells: skipped, ${health.available ? `no image ${DOCKER_BENCH_IMAGE}` : health.reason}`);
    return;
  }
  const rounds = Math.max(5, Math.floor(runs / 4));
  console.error(`swarm cells (${DOCKER_BENCH_IMAGE}, registry ${registry}): ${rounds} interleaved pairs, 24 cells on 3 nodes vs 1...`);
  suites['swarm cells'] = { rounds, lines: await benchSwarmCells(DOCKER_BENCH_IMAGE, registry, rounds, long) };
}

function dockerImageReady(image: string): Promise<boolean> {
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  return docker
    .ping()
    .then(() => docker.getImage(image).inspect())
    .then(
      () => true,
      () => false,
    );
}

function report(suites: Record<string, { rounds: number; lines: BenchLine[] }>): void {
  if (json) {
    console.log(JSON.stringify({ runs, suites }, null, 2));
    return;
  }
  for (const [suite, { rounds, lines }] of Object.entries(suites)) {
    console.log(`\n## ${suite} (${rounds} interleaved rounds; times are medians, ratios are medians of per-round ratios)`);
    for (const l of lines) {
      const value =
        l.unit === 'x' ? `${l.value.toFixed(2)}x` : l.unit === '%' ? `${l.value.toFixed(1)}%` : `${l.value.toFixed(2)} ${l.unit}`;
      const target = l.target ? `   target ${l.target}: ${l.met ? 'met' : 'MISSED'}` : '';
      console.log(`  ${l.name.padEnd(38)} ${value.padStart(10)}${target}`);
    }
  }
}

main().catch((e) => {
  console.error(`bench failed: ${(e as Error).message}`);
  process.exitCode = 1;
});
