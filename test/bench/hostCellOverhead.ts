import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { HostCellProvider } from '../../runner/src/cells/providers/host.js';
import { interleaved, median, timeAsync, timeSpawn } from './measure.js';

export interface BenchLine {
  name: string;
  value: number;
  unit: string;
  target?: string;
  met?: boolean;
}

/** Host cell running /bin/true vs a bare spawn and a bare bubblewrap sandbox of it. */
export async function benchHostCellOverhead(runs: number): Promise<BenchLine[]> {
  const probe = await probeBubblewrap();
  if (!probe.usable || !probe.path) throw new Error(`host cell benchmark needs bubblewrap: ${probe.reason}`);
  const bwrap = probe.path;
  const provider = new HostCellProvider({ bubblewrap: 'require' });
  const samples = await interleaved(
    {
      bare_spawn: () => timeSpawn('/bin/true', []),
      bare_bwrap: () => timeSpawn(bwrap, ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--unshare-all', '--die-with-parent', '--new-session', '--', '/bin/true']),
      host_cell: () => timeAsync(async () => {
        const r = await provider.run({ cmd: ['/bin/true'] });
        if (r.exit_code !== 0) throw new Error(`host cell /bin/true exited ${r.exit_code}: ${r.output}`);
      }),
    },
    runs,
  );
  await provider.drain();
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])) as Record<string, number>;
  const vsBwrap = m.host_cell! / m.bare_bwrap!;
  return [
    { name: 'bare spawn /bin/true (median)', value: m.bare_spawn!, unit: 'ms' },
    { name: 'bare bwrap /bin/true (median)', value: m.bare_bwrap!, unit: 'ms' },
    { name: 'host cell /bin/true (median)', value: m.host_cell!, unit: 'ms' },
    { name: 'host cell / bare spawn', value: m.host_cell! / m.bare_spawn!, unit: 'x' },
    { name: 'host cell / bare bwrap', value: vsBwrap, unit: 'x', target: '<= 1.5x', met: vsBwrap <= 1.5 },
  ];
}
