import { QemuCellProvider } from '../../../runner/src/cells/providers/qemuCellProvider.js';
import { findQemuTools } from '../../../runner/src/cells/qemu/qemuRuntime.js';
import { describeCellProviderConformance } from './conformance.js';

describeCellProviderConformance({
  title: 'qemu (microvm)',
  make: async () => {
    const tools = findQemuTools();
    return 'missing' in tools ? { unavailable: tools.missing } : { provider: new QemuCellProvider() };
  },
});
