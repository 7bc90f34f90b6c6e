import { findQemuTools } from '../../../runner/src/cells/qemu/qemuRuntime.js';
import { QemuInstanceProvider } from '../../../runner/src/instances/providers/qemuInstanceProvider.js';
import { requireFeature } from '../../helpers/requirement.js';
import { describeInstanceProviderConformance } from './instanceProviderConformance.js';

describeInstanceProviderConformance({
  name: 'qemu',
  make: (stateDir) => new QemuInstanceProvider({ stateDir }),
  spec: { provider: 'qemu', memory_mib: 256 },
  require: async (ctx) => {
    const tools = findQemuTools();
    requireFeature(ctx, !('missing' in tools), 'missing' in tools ? tools.missing : '');
  },
});
