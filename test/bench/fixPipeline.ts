import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CellProvider } from '../../runner/src/cells/provider.js';
import { DockerCellProvider } from '../../runner/src/cells/providers/dockerCellProvider.js';
import { HostCellProvider } from '../../runner/src/cells/providers/hostCellProvider.js';
import { bakeImage } from '../../runner/src/images/bakeImage.js';
import { ReplayModel } from '../../runner/src/repair/models/replayModel.js';
import { FixRequestSchema } from '../../runner/src/protocol/fixRequest.js';
import { runFix } from '../../runner/src/repair/runFix.js';
import { openStore } from '../../runner/src/store/openStore.js';
import { RunStore } from '../../runner/src/store/runStore.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

const SAMPLE = 'c-clamp';

function sampleRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'forge-bench-fix-'));
  cpSync(join(process.cwd(), 'samples', SAMPLE, 'repo'), dir, { recursive: true });
  const git = (...a: string[]) =>
    execFileSync('git', a, {
      cwd: dir,
      stdio: 'ignore',
      env: { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' },
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  return dir;
}

async function oneFix(provider: CellProvider, image: string, attempts: number, stateDir: string): Promise<number> {
  const repo = sampleRepo();
  try {
    return await timeAsync(async () => {
      const model = ReplayModel.fromFile(join(process.cwd(), 'samples', SAMPLE, 'replay.json'));
      const request = FixRequestSchema.parse({
        repo,
        issue: 'clamp is wrong',
        model: model.spec,
        attempts,
        temperature: 0.7,
        ...(image ? { image } : {}),
        max_tokens: 1e6,
        timeout_per_attempt_s: 600,
        cell_timeout_s: 120,
      });
      const { report } = await runFix(request, {
        store: new RunStore(openStore(join(stateDir, 'forge.db'))),
        provider,
        model,
        progress: () => undefined,
      });
      if (report.status !== 'fixed')
        throw new Error(`bench fix run was not fixed: ${JSON.stringify(report.attempts.map((a) => a.error ?? a.verdict?.green))}`);
    });
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}

/** The whole fix pipeline (K=2 on the C sample) in host cells vs the same with bubblewrap off. */
export async function benchFixIsolation(rounds: number): Promise<BenchLine[]> {
  const stateDir = mkdtempSync(join(tmpdir(), 'forge-bench-state-'));
  try {
    const samples = await interleaved(
      {
        isolated: () => oneFix(new HostCellProvider({ bubblewrap: 'require', stateDir }), '', 2, stateDir),
        plain: () => oneFix(new HostCellProvider({ bubblewrap: 'off', stateDir }), '', 2, stateDir),
      },
      rounds,
      1,
      50,
    );
    const overhead = pairedRatio(samples.isolated!, samples.plain!) - 1;
    return [
      { name: 'fix pipeline, host cells (bubblewrap)', value: median(samples.isolated!), unit: 'ms' },
      { name: 'fix pipeline, isolation off', value: median(samples.plain!), unit: 'ms' },
      { name: 'isolation overhead', value: overhead * 100, unit: '%', target: '< 5%', met: overhead < 0.05 },
    ];
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** Wall time of one fix run with K = 1, 2, 4, 8 attempts on docker cells. */
export async function benchFixScaling(baseImage: string, rounds: number): Promise<BenchLine[]> {
  const stateDir = mkdtempSync(join(tmpdir(), 'forge-bench-state-'));
  const repo = sampleRepo();
  try {
    const baked = await bakeImage(new Docker({ socketPath: '/var/run/docker.sock' }), { repo, base: baseImage });
    const provider = new DockerCellProvider({ stateDir });
    const ks = [1, 2, 4, 8];
    const samples = await interleaved(
      Object.fromEntries(ks.map((k) => [`k${k}`, () => oneFix(provider, baked.image, k, stateDir)])),
      rounds,
      1,
      50,
    );
    await provider.drain();
    return ks
      .map((k) => ({ name: `fix pipeline, K=${k}, docker cells`, value: median(samples[`k${k}`]!), unit: 'ms' }))
      .concat([{ name: 'K=8 / K=1 wall time', value: pairedRatio(samples.k8!, samples.k1!), unit: 'x' }]);
  } finally {
    rmSync(repo, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}
