import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireQemu } from '../../helpers/qemu.js';
import { QemuInstanceProvider } from '../../../runner/src/instances/providers/qemuInstanceProvider.js';
import { describeInstanceProviderConformance } from './instanceProviderConformance.js';

const tail = (path: string) => {
  try {
    return readFileSync(path, 'utf8').slice(-1500) || '(empty)';
  } catch (e) {
    return `(${(e as Error).message})`;
  }
};

describeInstanceProviderConformance({
  name: 'qemu',
  make: (stateDir) => new QemuInstanceProvider({ stateDir }),
  spec: { provider: 'qemu', memory_mib: 256 },
  require: async (ctx) => {
    requireQemu(ctx);
  },
  whyNotRunning: (stateDir, instance, generation) => {
    const boot = join(new QemuInstanceProvider({ stateDir }).incarnationDir(instance, generation), 'boot');
    return ['qemu.log', 'virtiofsd.log', 'console.log'].map((f) => `${f}: ${tail(join(boot, f))}`).join('\n');
  },
});
