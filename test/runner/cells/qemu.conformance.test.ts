import { QemuCellProvider } from '../../../runner/src/cells/providers/qemuCellProvider.js';
import { findQemuTools } from '../../../runner/src/cells/qemu/qemuRuntime.js';
import { describeCellProviderConformance } from './conformance.js';

// The same contract whether a cell's VM waited in the pool or booted for it.
for (const [pool, title] of [
  ['2', 'qemu (microvm), VMs from the pool'],
  ['0', 'qemu (microvm), pool off'],
] as const) {
  describeCellProviderConformance({
    title,
    make: async () => {
      const tools = findQemuTools();
      return 'missing' in tools
        ? { unavailable: tools.missing }
        : { provider: new QemuCellProvider({ env: { ...process.env, FORGE_QEMU_POOL: pool } }) };
    },
  });
}
