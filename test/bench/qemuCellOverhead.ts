import { QemuCellProvider } from '../../runner/src/cells/providers/qemuCellProvider.js';
import type { QemuTools } from '../../runner/src/cells/qemu/qemuRuntime.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

/**
 * qemu cell /bin/true (virtiofs shares, overlay, chroot, worktree-less) vs a bare boot of
 * the same kernel and initramfs that runs the same command from the initramfs alone.
 */
export async function benchQemuCells(tools: QemuTools, runs: number): Promise<{ lines: BenchLine[]; accelerator: string }> {
  const provider = new QemuCellProvider();
  const accel = await provider.accelerator(tools);
  const samples = await interleaved(
    {
      bare_boot: () =>
        timeAsync(async () => {
          const r = await provider.bareBoot(['/bin/true']);
          if (r.code !== 0) throw new Error(`bare boot exited ${r.code}`);
        }),
      qemu_cell: () =>
        timeAsync(async () => {
          const r = await provider.run({ cmd: ['/bin/true'] });
          if (r.exit_code !== 0)
            throw new Error(`qemu cell /bin/true exited ${r.exit_code}: ${r.output} ${r.isolation.warnings.join('; ')}`);
        }),
    },
    runs,
    1,
    100,
  );
  const ratio = pairedRatio(samples.qemu_cell!, samples.bare_boot!);
  const cellMs = median(samples.qemu_cell!);
  const limit = accel.accel === 'tcg' ? 2500 : null;
  return {
    accelerator: `${accel.accel} (${accel.reason})`,
    lines: [
      { name: `bare boot, same kernel+initramfs (${accel.accel})`, value: median(samples.bare_boot!), unit: 'ms' },
      {
        name: `qemu cell /bin/true (${accel.accel})`,
        value: cellMs,
        unit: 'ms',
        ...(limit ? { target: '< 2500 ms (TCG)', met: cellMs < limit } : {}),
      },
      { name: 'qemu cell / bare boot', value: ratio, unit: 'x', target: '<= 1.2x', met: ratio <= 1.2 },
    ],
  };
}
