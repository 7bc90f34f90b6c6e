import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeSpawn } from './measure.js';

/**
 * The bundled CLI (dist/runner.js, `npm run build` first), one process per sample as a user
 * runs it, against what it wraps: `--version` against a bare `node -e 0`; a one-shot host cell
 * against a bare node start plus a bare bubblewrap sandbox; a one-shot docker cell against
 * `docker run --rm` (when `image` is given). All variants interleaved in the same rounds.
 * FORGE_BENCH_RUNNER=path/to/runner.js measures another build (e.g. the one before a change).
 */
export async function benchCliStartup(runs: number, image: string | null): Promise<BenchLine[]> {
  const runner = resolve(process.env.FORGE_BENCH_RUNNER ?? join('dist', 'runner.js'));
  if (!existsSync(runner)) throw new Error(`${runner} is missing: npm run build first`);
  const probe = await probeBubblewrap();
  if (!probe.usable || !probe.path) throw new Error(`CLI startup benchmark needs bubblewrap: ${probe.reason}`);
  const bwrap = probe.path;
  const node = process.execPath;
  // A private state directory: cell logs of the benchmark do not pile up in the user's.
  const stateDir = mkdtempSync(join(tmpdir(), 'forge-bench-cli-'));
  const env = { ...process.env, FORGE_STATE_DIR: stateDir };
  const cli = (args: string[]) => timeSpawn(node, [runner, ...args], env);
  const variants: Record<string, () => Promise<number>> = {
    bare_node: () => timeSpawn(node, ['-e', '0']),
    cli_version: () => cli(['--version']),
    bare_bwrap: () => timeSpawn(bwrap, ['--ro-bind', '/', '/', '/bin/true']),
    cli_host_cell: () => cli(['cell', 'run', '--provider', 'host', '--', '/bin/true']),
  };
  if (image) {
    variants.raw_docker_run = () => timeSpawn('docker', ['run', '--rm', image, '/bin/true']);
    variants.cli_docker_cell = () => cli(['cell', 'run', '--provider', 'docker', '--image', image, '--', '/bin/true']);
  }
  let samples: Record<string, number[]>;
  try {
    samples = await interleaved(variants, runs, 2, 50);
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
  const m = (k: string) => median(samples[k]!);
  const versionRatio = pairedRatio(samples.cli_version!, samples.bare_node!);
  // Per round: what the CLI adds on top of starting node and starting a sandbox.
  const hostExcess = median(samples.cli_host_cell!.map((x, i) => x - samples.bare_node![i]! - samples.bare_bwrap![i]!));
  const lines: BenchLine[] = [
    { name: 'bare node -e 0', value: m('bare_node'), unit: 'ms' },
    { name: 'forge-runner --version', value: m('cli_version'), unit: 'ms' },
    { name: '--version / bare node', value: versionRatio, unit: 'x', target: '<= 1.5x', met: versionRatio <= 1.5 },
    { name: 'bare bwrap --ro-bind / / /bin/true', value: m('bare_bwrap'), unit: 'ms' },
    { name: 'cell run --provider host /bin/true', value: m('cli_host_cell'), unit: 'ms' },
    {
      name: 'host cell CLI / (node + bwrap)',
      value: median(samples.cli_host_cell!.map((x, i) => x / (samples.bare_node![i]! + samples.bare_bwrap![i]!))),
      unit: 'x',
    },
    { name: 'host cell CLI - node - bwrap', value: hostExcess, unit: 'ms', target: '<= 60 ms', met: hostExcess <= 60 },
  ];
  if (image) {
    const dockerRatio = pairedRatio(samples.cli_docker_cell!, samples.raw_docker_run!);
    lines.push(
      { name: 'raw docker run --rm /bin/true', value: m('raw_docker_run'), unit: 'ms' },
      { name: 'cell run --provider docker /bin/true', value: m('cli_docker_cell'), unit: 'ms' },
      { name: 'docker cell CLI / docker run --rm', value: dockerRatio, unit: 'x', target: '<= 1.0x', met: dockerRatio <= 1.0 },
    );
  }
  return lines;
}
