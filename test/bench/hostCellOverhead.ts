import { buildBubblewrapArgs } from '../../runner/src/cells/bubblewrapArgs.js';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { HostCellProvider } from '../../runner/src/cells/providers/hostCellProvider.js';
import { probeSandboxLayout } from '../../runner/src/cells/sandboxLayout.js';
import { interleaved, median, pairedRatio, timeAsync, timeSpawn } from './measure.js';

export interface BenchLine {
  name: string;
  value: number;
  unit: string;
  target?: string;
  met?: boolean;
}

/**
 * Host cell running /bin/true vs a bare spawn, a bare bubblewrap sandbox with the minimal
 * flags (the baseline), and bubblewrap with the cell's own mount set (so the runner's
 * own overhead can be told apart from the cost of the isolation policy). The headline cell
 * uses the provider's default prewarmed launcher (started and joined to a fresh cgroup ahead
 * of need, used once); the cold line shows one-shot use.
 */
export async function benchHostCellOverhead(runs: number): Promise<BenchLine[]> {
  const probe = await probeBubblewrap();
  if (!probe.usable || !probe.path) throw new Error(`host cell benchmark needs bubblewrap: ${probe.reason}`);
  const bwrap = probe.path;
  const cellArgs = buildBubblewrapArgs({
    layout: probeSandboxLayout(process.env),
    worktree: null,
    gitMetadata: null,
    env: { PATH: process.env.PATH ?? '' },
    argv: ['/bin/true'],
  });
  const provider = new HostCellProvider({ bubblewrap: 'require' });
  // One-shot use (a single CLI command): the launcher is spawned and joins its cgroup on the clock.
  const coldProvider = new HostCellProvider({ bubblewrap: 'require', prewarm: 0 });
  const samples = await interleaved(
    {
      bare_spawn: () => timeSpawn('/bin/true', []),
      bare_bwrap: () =>
        timeSpawn(bwrap, [
          '--ro-bind',
          '/',
          '/',
          '--dev',
          '/dev',
          '--proc',
          '/proc',
          '--tmpfs',
          '/tmp',
          '--unshare-all',
          '--die-with-parent',
          '--new-session',
          '--',
          '/bin/true',
        ]),
      policy_bwrap: () => timeSpawn(bwrap, cellArgs),
      host_cell: () =>
        timeAsync(async () => {
          const r = await provider.run({ cmd: ['/bin/true'] });
          if (r.exit_code !== 0) throw new Error(`host cell /bin/true exited ${r.exit_code}: ${r.output}`);
        }),
      host_cell_cold: () =>
        timeAsync(async () => {
          const r = await coldProvider.run({ cmd: ['/bin/true'] });
          if (r.exit_code !== 0) throw new Error(`cold host cell /bin/true exited ${r.exit_code}: ${r.output}`);
        }),
    },
    runs,
  );
  await provider.drain();
  await coldProvider.drain();
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])) as Record<string, number>;
  const vsBwrap = pairedRatio(samples.host_cell!, samples.bare_bwrap!);
  return [
    { name: 'bare spawn /bin/true', value: m.bare_spawn!, unit: 'ms' },
    { name: 'bare bwrap /bin/true (minimal flags)', value: m.bare_bwrap!, unit: 'ms' },
    { name: 'bwrap with the cell mount set', value: m.policy_bwrap!, unit: 'ms' },
    { name: 'host cell /bin/true', value: m.host_cell!, unit: 'ms' },
    { name: 'host cell /bin/true, cold (prewarm 0)', value: m.host_cell_cold!, unit: 'ms' },
    { name: 'host cell / bare spawn', value: pairedRatio(samples.host_cell!, samples.bare_spawn!), unit: 'x' },
    { name: 'host cell / bare bwrap', value: vsBwrap, unit: 'x', target: '<= 1.5x', met: vsBwrap <= 1.5 },
    { name: 'host cell / bwrap with cell mounts', value: pairedRatio(samples.host_cell!, samples.policy_bwrap!), unit: 'x' },
    { name: 'cold host cell / bare bwrap', value: pairedRatio(samples.host_cell_cold!, samples.bare_bwrap!), unit: 'x' },
  ];
}
