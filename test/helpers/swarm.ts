import { SwarmCellProvider } from '../../runner/src/cells/providers/swarmCellProvider.js';
import { TEST_IMAGES } from './docker.js';
import { dockerUnavailable } from './docker.js';

/** The registry of the local test cluster (scripts/swarm-cluster.sh), unless FORGE_SWARM_REGISTRY names another. */
export const TEST_SWARM_REGISTRY = process.env.FORGE_SWARM_REGISTRY || '127.0.0.1:5000';

/** Why swarm tests cannot run here (no manager, registry or enough ready nodes), or null. */
export async function swarmUnavailable(minNodes = 1): Promise<string | null> {
  const docker = await dockerUnavailable(TEST_IMAGES.busybox);
  if (docker) return docker;
  const health = await new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY }).health();
  if (!health.available) return `${health.reason} (start the test cluster: scripts/swarm-cluster.sh up)`;
  const ready = Object.entries(health.details).filter(([k, v]) => k.startsWith('node ') && v.startsWith('ready, active')).length;
  if (ready < minNodes) return `the swarm has ${ready} ready node(s), this test needs ${minNodes} (scripts/swarm-cluster.sh up starts 3)`;
  return null;
}
