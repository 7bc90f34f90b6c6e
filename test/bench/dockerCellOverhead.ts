import { DockerCellProvider } from '../../runner/src/cells/providers/dockerCellProvider.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeAsync, timeSpawn } from './measure.js';

/**
 * Docker cell /bin/true vs the docker CLI doing the same (`docker run --rm --network none`),
 * and K cells in parallel vs the same K one after another.
 */
export async function benchDockerCells(image: string, runs: number): Promise<BenchLine[]> {
  const provider = new DockerCellProvider();
  const cell = () =>
    provider.run({ image, cmd: ['/bin/true'] }).then((r) => {
      if (r.exit_code !== 0) throw new Error(`docker cell /bin/true exited ${r.exit_code}: ${r.output}`);
    });
  const samples = await interleaved(
    {
      raw_docker_run: () => timeSpawn('docker', ['run', '--rm', '--network', 'none', image, '/bin/true']),
      docker_cell: () => timeAsync(cell),
    },
    runs,
    2,
    50,
  );
  const k = 4;
  const batches = await interleaved(
    {
      sequential: () =>
        timeAsync(async () => {
          for (let i = 0; i < k; i++) await cell();
        }),
      parallel: () => timeAsync(() => Promise.all(Array.from({ length: k }, cell))),
    },
    Math.max(5, Math.floor(runs / 3)),
    1,
    50,
  );
  await provider.drain();
  const ratio = pairedRatio(samples.docker_cell!, samples.raw_docker_run!);
  return [
    { name: 'raw docker run --rm --network none', value: median(samples.raw_docker_run!), unit: 'ms' },
    { name: 'docker cell /bin/true', value: median(samples.docker_cell!), unit: 'ms' },
    { name: 'docker cell / raw docker run', value: ratio, unit: 'x', target: '<= 1.0x', met: ratio <= 1.0 },
    { name: `${k} cells sequential`, value: median(batches.sequential!), unit: 'ms' },
    { name: `${k} cells parallel`, value: median(batches.parallel!), unit: 'ms' },
    { name: `${k} parallel / ${k} sequential`, value: pairedRatio(batches.parallel!, batches.sequential!), unit: 'x' },
  ];
}
