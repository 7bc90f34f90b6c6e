import { DockerCellProvider } from '../../runner/src/cells/providers/dockerCellProvider.js';
import { SwarmCellProvider } from '../../runner/src/cells/providers/swarmCellProvider.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

/**
 * A swarm cell vs a local docker cell (same image, same command), a 30 s command on both (the
 * gap a real test run sees), and 24 cells spread over the cluster vs the same 24 on one node.
 * The test cluster's nodes share the machine's cores: the 24-cell ratio is the scheduler's
 * overhead, not a speed-up.
 */
export async function benchSwarmCells(image: string, registry: string, runs: number, long: boolean): Promise<BenchLine[]> {
  const docker = new DockerCellProvider();
  // Where a swarm cell's time goes: the steps of every measured cell (see onTimings).
  const timings: Record<string, number>[] = [];
  const swarm = new SwarmCellProvider({ registry, onTimings: (m) => timings.push(m) });
  const oneNode = new SwarmCellProvider({ registry, constraints: ['node.role==manager'] });
  const cell =
    (p: DockerCellProvider | SwarmCellProvider, cmd: string[], memory = 256, allowNet: string[] | false = false) =>
    () =>
      p.run({ image, cmd, limits: { memory_mib: memory }, allow_net: allowNet }).then((r) => {
        if (r.exit_code !== 0) throw new Error(`${p.name} cell ${cmd.join(' ')} exited ${r.exit_code}: ${r.output}`);
      });
  // The first swarm cell builds and pushes the base image and each node pulls it once: warm-up.
  const samples = await interleaved(
    { docker_cell: () => timeAsync(cell(docker, ['/bin/true'])), swarm_cell: () => timeAsync(cell(swarm, ['/bin/true'])) },
    runs,
    3,
    50,
  );
  const ratio = pairedRatio(samples.swarm_cell!, samples.docker_cell!);
  const steps = stepMedians(timings.slice(-runs));
  const lines: BenchLine[] = [
    { name: 'docker cell /bin/true', value: median(samples.docker_cell!), unit: 'ms' },
    { name: 'swarm cell /bin/true', value: median(samples.swarm_cell!), unit: 'ms' },
    { name: 'swarm cell / docker cell', value: ratio, unit: 'x', target: '<= 3.0x', met: ratio <= 3 },
    ...steps,
  ];
  // The relay's cost: a cell on its own overlay with the relay on it, against one with no network.
  const net = await interleaved(
    {
      no_net: () => timeAsync(cell(swarm, ['/bin/true'])),
      allow_net: () => timeAsync(cell(swarm, ['/bin/true'], 256, ['localhost'])),
    },
    runs,
    2,
    50,
  );
  lines.push(
    { name: 'swarm cell with allow_net', value: median(net.allow_net!), unit: 'ms' },
    { name: 'allow_net / no network (relay)', value: pairedRatio(net.allow_net!, net.no_net!), unit: 'x' },
  );
  if (long) {
    const slow = await interleaved(
      { docker_cell: () => timeAsync(cell(docker, ['sleep', '30'])), swarm_cell: () => timeAsync(cell(swarm, ['sleep', '30'])) },
      1,
      0,
      50,
    );
    const gap = (pairedRatio(slow.swarm_cell!, slow.docker_cell!) - 1) * 100;
    lines.push({ name: 'sleep 30: swarm vs docker cell', value: gap, unit: '%', target: '< 5%', met: gap < 5 });
  }
  const k = 24;
  const batches = await interleaved(
    {
      three_nodes: () => timeAsync(() => Promise.all(Array.from({ length: k }, cell(swarm, ['/bin/true'])))),
      one_node: () => timeAsync(() => Promise.all(Array.from({ length: k }, cell(oneNode, ['/bin/true'])))),
    },
    Math.max(2, Math.floor(runs / 5)),
    1,
    200,
  );
  await Promise.all([docker.drain(), swarm.drain(), oneNode.drain()]);
  lines.push(
    { name: `${k} cells on 3 nodes`, value: median(batches.three_nodes!), unit: 'ms' },
    { name: `${k} cells on 1 node`, value: median(batches.one_node!), unit: 'ms' },
    { name: `${k} cells: 1 node / 3 nodes (throughput)`, value: pairedRatio(batches.one_node!, batches.three_nodes!), unit: 'x' },
  );
  return lines;
}

/** The median time of each step of a swarm cell, from the one before it (ms). */
function stepMedians(marks: Record<string, number>[]): BenchLine[] {
  // task_running is seen only when a poll falls between the task's start and its end: left out.
  const order = ['prepared', 'service_created', 'first_output', 'frame_ended', 'waited', 'result'];
  const lines: BenchLine[] = [];
  for (let i = 0; i < order.length; i++) {
    const step = order[i]!;
    const gaps = marks
      .filter((m) => m[step] !== undefined)
      .map(
        (m) =>
          m[step]! -
          (i === 0
            ? 0
            : (order
                .slice(0, i)
                .reverse()
                .map((s) => m[s])
                .find((v) => v !== undefined) ?? 0)),
      );
    if (gaps.length > 0) lines.push({ name: `  step to ${STEP_NAMES[step] ?? step}`, value: median(gaps), unit: 'ms' });
  }
  return lines;
}

const STEP_NAMES: Record<string, string> = {
  prepared: 'images, configs, secret',
  service_created: 'service created',
  first_output: 'first output (placed, started)',
  frame_ended: 'result frame',
  waited: 'cell ended',
  result: 'result assembled',
};
