import type Docker from 'dockerode';

export const EGRESS_NETWORK = 'forge-egress';

export interface EgressNetwork {
  name: string;
  gateway: string;
  bridge: string;
}

/**
 * The internal Docker network allow_net cells join: no route out; the only thing they can
 * reach is the runner's proxy on the bridge's gateway address.
 */
export async function ensureEgressNetwork(docker: Docker): Promise<EgressNetwork> {
  let info = await inspect(docker);
  if (info && !containersIsolated(info) && info.Labels?.['forge.network'] === 'egress' && Object.keys(info.Containers ?? {}).length === 0) {
    // Made by an older runner, which let its containers talk to each other: made again.
    await docker
      .getNetwork(EGRESS_NETWORK)
      .remove()
      .catch(() => undefined);
    info = await inspect(docker);
  }
  if (!info) {
    try {
      await docker.createNetwork({
        Name: EGRESS_NETWORK,
        Driver: 'bridge',
        Internal: true,
        CheckDuplicate: true,
        Labels: { 'forge.network': 'egress' },
        // Cells on this network must not reach each other (a cell of another run, a peer it
        // starts): their only way anywhere is the proxy, which checks each cell's allowlist.
        Options: { [ICC_OPTION]: 'false' },
      });
    } catch (e) {
      // Another runner created it meanwhile.
      if ((e as { statusCode?: number }).statusCode !== 409) throw e;
    }
    info = await inspect(docker);
  }
  if (!info) throw new Error(`docker network ${EGRESS_NETWORK} could not be created`);
  if (!info.Internal)
    throw new Error(`docker network ${EGRESS_NETWORK} exists but is not internal; remove it (docker network rm ${EGRESS_NETWORK})`);
  if (!containersIsolated(info))
    throw new Error(
      `docker network ${EGRESS_NETWORK} lets containers reach each other (${ICC_OPTION} is not false) and is in use; remove it once its cells are done (docker network rm ${EGRESS_NETWORK})`,
    );
  const gateway = info.IPAM?.Config?.[0]?.Gateway;
  if (!gateway) throw new Error(`docker network ${EGRESS_NETWORK} has no gateway address`);
  const bridge = info.Options?.['com.docker.network.bridge.name'] ?? `br-${info.Id.slice(0, 12)}`;
  return { name: EGRESS_NETWORK, gateway, bridge };
}

const ICC_OPTION = 'com.docker.network.bridge.enable_icc';

function containersIsolated(info: Docker.NetworkInspectInfo): boolean {
  return info.Options?.[ICC_OPTION] === 'false';
}

async function inspect(docker: Docker): Promise<Docker.NetworkInspectInfo | null> {
  try {
    return (await docker.getNetwork(EGRESS_NETWORK).inspect()) as Docker.NetworkInspectInfo;
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return null;
    throw e;
  }
}

/**
 * The gateway address is the host: without a guard a cell could reach every host service
 * listening on all interfaces. Drops everything arriving from the egress bridge except the
 * proxy port. Returns how to lift this runner's exception, or why no guard could be set.
 */
export async function guardEgressBridge(
  bridge: string,
  proxyPort: number,
): Promise<{ release: () => Promise<void> } | { unguarded: string }> {
  // execa is loaded on first use: only cells with an allowlist reach here.
  const { execa } = await import('execa');
  const iptables = async (...args: string[]) => execa('iptables', ['-w', ...args], { reject: false });
  const drop = ['INPUT', '-i', bridge, '-j', 'DROP'];
  const accept = ['INPUT', '-i', bridge, '-p', 'tcp', '--dport', String(proxyPort), '-j', 'ACCEPT'];
  const probe = await iptables('-C', ...drop).catch((e: Error) => ({ exitCode: -1, stderr: e.message }));
  if (probe.exitCode !== 0) {
    const add = await iptables('-I', ...drop).catch((e: Error) => ({ exitCode: -1, stderr: e.message }));
    if (add.exitCode !== 0) return { unguarded: `iptables unavailable (${String(add.stderr).split('\n')[0]})` };
  }
  // Inserted above the DROP rule.
  const allowed = await iptables('-I', ...accept);
  if (allowed.exitCode !== 0) return { unguarded: `iptables refused the proxy rule (${String(allowed.stderr).split('\n')[0]})` };
  return { release: async () => void (await iptables('-D', ...accept)) };
}
