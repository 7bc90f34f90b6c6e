import { INSTANCE_PROVIDERS } from '../../protocol/instanceCell.js';
import { DockerInstanceProvider } from './dockerInstanceProvider.js';
import { HostInstanceProvider } from './hostInstanceProvider.js';
import { QemuInstanceProvider } from './qemuInstanceProvider.js';
import type { InstanceProvider } from './instanceProvider.js';

export type InstanceProviderName = (typeof INSTANCE_PROVIDERS)[number];

/** Why a provider cannot be used at all in this build (not a runtime health problem). */
export const NOT_BUILT: Partial<Record<InstanceProviderName, string>> = {};

export interface InstanceProviders {
  get(name: InstanceProviderName): InstanceProvider | null;
}

/** The real providers, created on first use and shared. */
export function defaultInstanceProviders(options: { stateDir?: string } = {}): InstanceProviders {
  const made = new Map<InstanceProviderName, InstanceProvider>();
  return {
    get(name) {
      if (NOT_BUILT[name]) return null;
      let p = made.get(name);
      if (!p) {
        p =
          name === 'docker'
            ? new DockerInstanceProvider(options)
            : name === 'qemu'
              ? new QemuInstanceProvider(options)
              : new HostInstanceProvider(options);
        made.set(name, p);
      }
      return p;
    },
  };
}
