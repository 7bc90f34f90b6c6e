import { requireQemu } from '../../helpers/qemu.js';
import { QemuInstanceProvider } from '../../../runner/src/instances/providers/qemuInstanceProvider.js';
import { describeInstanceProviderConformance } from './instanceProviderConformance.js';

describeInstanceProviderConformance({
  name: 'qemu',
  make: (stateDir) => new QemuInstanceProvider({ stateDir }),
  spec: { provider: 'qemu', memory_mib: 256 },
  require: async (ctx) => {
    requireQemu(ctx);
  },
});
