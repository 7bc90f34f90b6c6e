import { DockerCellProvider } from '../../runner/src/cells/providers/dockerCellProvider.js';
import { QemuCellProvider } from '../../runner/src/cells/providers/qemuCellProvider.js';
import type { QemuTools } from '../../runner/src/cells/qemu/qemuRuntime.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

async function untilReady(p: QemuCellProvider, n: number): Promise<void> {
  const end = Date.now() + 300_000;
  while ((p.poolCounts()?.ready ?? 0) < n) {
    if (Date.now() > end) throw new Error(`the VM pool did not reach ${n} ready VMs in 300 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function trueCell(p: QemuCellProvider): Promise<void> {
  const r = await p.run({ cmd: ['/bin/true'] });
  if (r.exit_code !== 0) throw new Error(`qemu cell /bin/true exited ${r.exit_code}: ${r.output} ${r.isolation.warnings.join('; ')}`);
}

/** The first cell of a fresh provider (a run's first), with FORGE_QEMU_POOL=`pool`. */
async function firstCell(pool: string): Promise<number> {
  const fresh = new QemuCellProvider({ env: { ...process.env, FORGE_QEMU_POOL: pool } });
  try {
    return await timeAsync(() => trueCell(fresh));
  } finally {
    await fresh.drain();
  }
}

/**
 * qemu cells /bin/true, side by side in one run: a bare boot of the same kernel and initramfs
 * (the command from the initramfs alone), a cell whose VM boots for it (pool off: a miss),
 * a cell from the warm pool (the wait for a ready VM is outside the clock), a docker cell
 * (when `dockerImage` is given), and 4 cells at once from a pool of 4 against 4 in a row.
 */
export async function benchQemuCells(
  tools: QemuTools,
  runs: number,
  dockerImage: string | null,
): Promise<{ lines: BenchLine[]; accelerator: string }> {
  const cold = new QemuCellProvider({ env: { ...process.env, FORGE_QEMU_POOL: '0' } });
  const warm = new QemuCellProvider({ env: { ...process.env, FORGE_QEMU_POOL: '1' } });
  const docker = dockerImage ? new DockerCellProvider() : null;
  const accel = await cold.accelerator(tools);
  await trueCell(warm);
  const variants: Record<string, () => Promise<number>> = {
    bare_boot: () =>
      timeAsync(async () => {
        const r = await cold.bareBoot(['/bin/true']);
        if (r.code !== 0) throw new Error(`bare boot exited ${r.code}`);
      }),
    cold_cell: () => timeAsync(() => trueCell(cold)),
    // The first cell of a run (a fresh provider): pool on, a miss while the pool fills (its 2
    // replacements must not slow it), against pool off.
    first_cell_pool_on: () => firstCell('2'),
    first_cell_pool_off: () => firstCell('0'),
    warm_cell: async () => {
      await untilReady(warm, 1);
      return timeAsync(() => trueCell(warm));
    },
  };
  if (docker && dockerImage)
    variants.docker_cell = () =>
      timeAsync(async () => {
        const r = await docker.run({ image: dockerImage, cmd: ['/bin/true'] });
        if (r.exit_code !== 0) throw new Error(`docker cell exited ${r.exit_code}`);
      });
  let samples: Record<string, number[]>;
  try {
    samples = await interleaved(variants, runs, 1, 100);
  } finally {
    await warm.drain();
  }
  // 4 at once from a pool of 4 (all ready before the clock starts) against 4 in a row, each booting its own.
  // Room for 4 VMs of the default size (2048 MiB; guest memory is only touched as used).
  const four = new QemuCellProvider({ env: { ...process.env, FORGE_QEMU_POOL: '4', FORGE_QEMU_POOL_MEMORY_MIB: '16384' } });
  let parallelMs: number;
  let sequentialMs: number;
  try {
    await trueCell(four);
    await untilReady(four, 4);
    parallelMs = await timeAsync(() => Promise.all([0, 1, 2, 3].map(() => trueCell(four))));
    await four.drain();
    sequentialMs = await timeAsync(async () => {
      for (let i = 0; i < 4; i++) await trueCell(cold);
    });
  } finally {
    await four.drain();
    await cold.drain();
    await docker?.drain();
  }
  const warmMs = median(samples.warm_cell!);
  const coldRatio = pairedRatio(samples.cold_cell!, samples.bare_boot!);
  const firstRatio = pairedRatio(samples.first_cell_pool_on!, samples.first_cell_pool_off!);
  const lines: BenchLine[] = [
    { name: `bare boot, same kernel+initramfs (${accel.accel})`, value: median(samples.bare_boot!), unit: 'ms' },
    { name: `qemu cell /bin/true, pool miss (boots its VM)`, value: median(samples.cold_cell!), unit: 'ms' },
    // Before the pool (2026-11-30): 1.34x the bare boot, 5.56 s.
    { name: 'pool miss / bare boot', value: coldRatio, unit: 'x', target: '<= 1.34x (the cell before the pool)', met: coldRatio <= 1.34 },
    {
      name: 'first cell of a run: pool of 2 filling / pool off',
      value: firstRatio,
      unit: 'x',
      target: '<= 1.1x (replacements boot after the missed VM)',
      met: firstRatio <= 1.1,
    },
    { name: `qemu cell /bin/true, warm pool (${accel.accel})`, value: warmMs, unit: 'ms', target: '<= 1000 ms', met: warmMs <= 1000 },
  ];
  if (samples.docker_cell) {
    const vsDocker = pairedRatio(samples.warm_cell!, samples.docker_cell);
    lines.push(
      { name: 'docker cell /bin/true (same rounds)', value: median(samples.docker_cell), unit: 'ms' },
      { name: 'warm qemu cell / docker cell', value: vsDocker, unit: 'x', target: '<= 5x', met: vsDocker <= 5 },
    );
  }
  lines.push(
    { name: '4 qemu cells at once from a pool of 4', value: parallelMs, unit: 'ms' },
    { name: '4 qemu cells in a row, each booting', value: sequentialMs, unit: 'ms' },
    { name: '4 in a row / 4 at once from the pool', value: sequentialMs / parallelMs, unit: 'x' },
  );
  return { accelerator: `${accel.accel} (${accel.reason})`, lines };
}
