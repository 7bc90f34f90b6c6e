import type { ProviderName } from '../protocol/cellResult.js';
import { ProviderNameSchema } from '../protocol/cellResult.js';
import type { HealthReport, ProviderHealth } from '../protocol/health.js';
import { InputError } from '../protocol/inputError.js';
import type { CellProvider } from './provider.js';
import { DockerCellProvider } from './providers/dockerCellProvider.js';
import { HostCellProvider } from './providers/hostCellProvider.js';
import { QemuCellProvider } from './providers/qemuCellProvider.js';
import { SwarmCellProvider } from './providers/swarmCellProvider.js';

/** Options every provider understands (each ignores what does not apply to it). */
export interface ProviderOptions {
  stateDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Cells prepared ahead of need; 0 for one-shot use. */
  prewarm?: number;
  /** swarm: the manager (unix://, tcp://, ssh://); default DOCKER_HOST. */
  dockerHost?: string;
  /** swarm: HOST:PORT of the registry the nodes pull from; default FORGE_SWARM_REGISTRY. */
  registry?: string;
}

/** Providers this build can construct. */
const BUILT: Partial<Record<ProviderName, (o: ProviderOptions) => CellProvider>> = {
  host: (o) => new HostCellProvider(o),
  docker: (o) => new DockerCellProvider(o),
  qemu: (o) => new QemuCellProvider(o),
  swarm: (o) => new SwarmCellProvider(o),
};

export function providerNames(): ProviderName[] {
  return [...ProviderNameSchema.options];
}

export function createProvider(name: string, options: ProviderOptions = {}): CellProvider {
  const known = ProviderNameSchema.safeParse(name);
  if (!known.success) throw new InputError(`unknown provider "${name}"; choose one of: ${providerNames().join(', ')}`);
  const make = BUILT[known.data];
  if (!make) throw new InputError(`provider "${name}" is not part of this forge-runner build yet; use --provider host, docker or swarm`);
  return make(options);
}

export async function collectHealth(options: ProviderOptions = {}): Promise<HealthReport> {
  const providers: ProviderHealth[] = [];
  for (const name of providerNames()) {
    const make = BUILT[name];
    if (!make) {
      providers.push({ provider: name, available: false, reason: 'not part of this forge-runner build yet', isolation: null, details: {} });
      continue;
    }
    providers.push(await make(options).health());
  }
  const usable = providers.filter((p) => p.available);
  return {
    generated_at: new Date().toISOString(),
    default_provider: usable.find((p) => !p.isolation?.degraded)?.provider ?? usable[0]?.provider ?? null,
    providers,
  };
}
