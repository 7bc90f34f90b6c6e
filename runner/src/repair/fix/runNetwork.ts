import type { CellProvider } from '../../cells/provider.js';
import { detectStacks, registryHosts } from '../../images/detectStack.js';
import { readRepoFacts } from '../../images/readRepoFacts.js';
import { InputError } from '../../protocol/inputError.js';

/** The hosts the install cell may reach: the package registries of the repository's stacks. */
export function installRegistries(repo: string): string[] {
  return registryHosts(detectStacks(readRepoFacts(repo)).map((st) => st.stack));
}

/**
 * Pure: why a run cannot start on a provider whose cells get no network (`refusal`), or null.
 * Only a run that needs the network is refused: one with --allow-net, or an install step
 * whose stack has registries.
 */
export function runNetworkRefusal(
  need: { allowNet: string[]; install: { hosts: string[] } | null },
  refusal: { why: string; fix: string } | null,
): string | null {
  if (!refusal) return null;
  if (need.allowNet.length > 0) return `--allow-net ${need.allowNet.join(', ')}: ${refusal.why}; drop --allow-net or ${refusal.fix}`;
  if (need.install && need.install.hosts.length > 0)
    return `--install-cmd needs the package registries (${need.install.hosts.join(', ')}), but ${refusal.why}; install the dependencies in your checkout (they are shared with every cell), or ${refusal.fix}`;
  return null;
}

/** Refuses, before anything is recorded, a run whose cells would need a network the provider cannot give. */
export async function checkRunNetwork(
  repo: string,
  request: { allow_net: string[]; install_cmd?: string | null | undefined },
  provider: CellProvider,
): Promise<void> {
  const install = request.install_cmd ? { hosts: installRegistries(repo) } : null;
  if (request.allow_net.length === 0 && !(install && install.hosts.length > 0)) return;
  const why = runNetworkRefusal({ allowNet: request.allow_net, install }, (await provider.egressRefusal?.()) ?? null);
  if (why) throw new InputError(why);
}
