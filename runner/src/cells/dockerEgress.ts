import type Docker from 'dockerode';
import { type EgressNetwork, ensureEgressNetwork, guardEgressBridge } from './egressNetwork.js';
import { EgressProxy } from './egressProxy.js';

/** The runner's egress proxy on an engine's egress network, and the guard around the host behind it. */
export interface DockerEgress {
  network: EgressNetwork;
  proxy: EgressProxy;
  port: number;
  /** Lifts this runner's exception in the host guard; null when no guard could be set. */
  release: (() => Promise<void>) | null;
  /** Why host services on the gateway stay reachable, when the guard could not be set. */
  unguarded: string | null;
}

/**
 * The internal egress network on `docker`, this runner's proxy listening on its gateway and
 * the iptables guard that lets containers there reach the proxy's port and nothing else of
 * the host. Docker cells join the network; swarm cells reach it through their relay.
 */
export async function startDockerEgress(docker: Docker): Promise<DockerEgress> {
  const network = await ensureEgressNetwork(docker);
  const proxy = new EgressProxy(network.gateway);
  const port = await proxy.start();
  const guard = await guardEgressBridge(network.bridge, port);
  return 'release' in guard
    ? { network, proxy, port, release: guard.release, unguarded: null }
    : { network, proxy, port, release: null, unguarded: guard.unguarded };
}

/** Closes the proxy and lifts the guard's exception. */
export async function stopDockerEgress(egress: DockerEgress): Promise<void> {
  await egress.proxy.close();
  await egress.release?.();
}
