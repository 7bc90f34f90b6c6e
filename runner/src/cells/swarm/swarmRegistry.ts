import { InputError } from '../../protocol/inputError.js';
import { parseRegistry } from './swarmServiceSpec.js';
import { SwarmUnavailableError } from './swarmUnavailable.js';

/** The registry the nodes pull cell images from, as the runner names and reaches it. */
export class SwarmRegistry {
  /** As the user gave it (--registry or FORGE_SWARM_REGISTRY); checked when a cell needs it. */
  constructor(private readonly raw: string | undefined) {}

  /** HOST:PORT; InputError when it is missing or not one. */
  address(): string {
    try {
      return parseRegistry(this.raw);
    } catch (e) {
      throw new InputError((e as Error).message);
    }
  }

  /** The URL of an API path on the registry. */
  url(registry: string, path: string): string {
    // Loopback registries speak plain HTTP (engines trust them without TLS); others HTTPS.
    const plain = /^(127\.|localhost(:|$))/.test(registry) || this.raw?.startsWith('http://');
    return `${plain ? 'http' : 'https'}://${registry}${path}`;
  }

  /** Resolves when the registry answers; SwarmUnavailableError saying what to do otherwise. */
  async check(registry: string): Promise<void> {
    try {
      const r = await fetch(this.url(registry, '/v2/'), { signal: AbortSignal.timeout(5000) });
      // 401: a registry that wants credentials answers too (the nodes' engines hold them).
      if (!r.ok && r.status !== 401) throw new Error(`HTTP ${r.status}`);
    } catch (e) {
      throw new SwarmUnavailableError(
        `the registry ${registry} does not answer (${(e as Error).message}); start it (scripts/swarm-cluster.sh up) or pass --registry HOST:PORT`,
      );
    }
  }
}
