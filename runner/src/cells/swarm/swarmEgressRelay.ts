import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { LABEL_CELL, LABEL_RUN, LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from '../dockerContainerSpec.js';
import { type DockerEgress, startDockerEgress, stopDockerEgress } from '../dockerEgress.js';
import { SwarmUnavailableError } from './swarmUnavailable.js';
import { dockerContext, followProgress } from './registryImages.js';
import { removeWithRetry } from './swarmTaskDriver.js';

/**
 * How a swarm cell with allow_net reaches the runner's egress proxy, and nothing else.
 *
 * The proxy listens where docker cells reach it: on the gateway of the manager engine's
 * internal `forge-egress` bridge, behind the iptables guard that lets only its port through.
 * A swarm task cannot join a bridge network, so each allow_net cell gets a pair: an internal,
 * attachable overlay of its own, and a relay container of its own on the runner's engine (the
 * manager) that sits on that overlay and on the bridge and carries TCP from port 3128 to the
 * proxy's port, nothing else. The cell's task and its relay are the overlay's only members:
 * no cell can reach another cell's task (overlays have no switch between members), the
 * overlay has no route out, the relay's namespace forwards nothing (ip_forward=0), and a cell
 * that floods or kills its relay harms only itself. The proxy binds the cell's token to its
 * relay's address on the bridge: a token that leaked to another cell is refused there. A
 * standalone container rather than a service: a task cannot reach the bridge.
 */

/** The relay's port on each cell's overlay (the cell's HTTP(S)_PROXY). */
export const RELAY_PORT = 3128;
export const RELAY_REPOSITORY = 'forge-egress-relay';
/** On each overlay and relay: the runner's relay role (gc and tests find them by it). */
export const LABEL_ROLE = 'forge.role';

/** One cell's overlay and relay. */
export interface CellNetwork {
  networkId: string;
  networkName: string;
  /** The relay's address on the overlay: the cell's proxy. */
  relayIp: string;
  relayId: string;
  /** The relay's address on the egress bridge: the only place the cell's token counts from. */
  relaySource: string;
}

interface RelayState {
  egress: DockerEgress;
  image: string;
}

/** Pairs made ahead of the cells that take them. */
const SPARE_PAIRS = 2;
/**
 * busybox nc's listen backlog is the number of l's it is given (-ll: 2). With 2, a burst of a
 * package manager's parallel connections loses SYNs and waits out 1 s retries.
 */
const LISTEN = `-${'l'.repeat(64)}`;

export class SwarmEgressRelay {
  private state: Promise<RelayState> | null = null;
  private readonly spares: Promise<CellNetwork | null>[] = [];

  /** `docker` is the manager, which must be the runner's own engine (see egressRefusal). */
  constructor(
    private readonly docker: Docker,
    private readonly busybox: string,
  ) {}

  /** The proxy behind the relays (grants and revocations go to it). */
  async egress(): Promise<DockerEgress> {
    return (await this.ensure()).egress;
  }

  /**
   * The cell's own overlay and relay; removed by detach once the cell's task is gone. A pair
   * made ahead when there is one (never one another cell had): making an overlay, starting a
   * relay and joining them takes most of a second, off the cell's path this way.
   */
  async attach(cellId: string, labels: Record<string, string>): Promise<CellNetwork> {
    await this.ensure();
    while (this.spares.length > 0) {
      const spare = await this.spares.shift()!;
      if (spare) {
        this.refill();
        return spare;
      }
    }
    const net = await this.create(`forge-net-${cellId}`, labels);
    this.refill();
    return net;
  }

  /** Removes the cell's relay and overlay (after the cell's service is gone). */
  async detach(net: Pick<CellNetwork, 'networkId' | 'relayId'>): Promise<void> {
    if (net.relayId !== '')
      await this.docker
        .getContainer(net.relayId)
        .remove({ force: true })
        .catch(() => undefined);
    // A worker drops its end of the overlay a moment after its task is removed: up to 30 s.
    await removeWithRetry(() => this.docker.getNetwork(net.networkId).remove(), 120);
  }

  /** Removes the pairs made ahead and closes the proxy. */
  async close(): Promise<void> {
    const spares = this.spares.splice(0);
    const state = await this.state?.catch(() => null);
    this.state = null;
    for (const spare of spares) {
      const net = await spare;
      if (net) await this.detach(net);
    }
    if (state) await stopDockerEgress(state.egress);
  }

  /** Keeps SPARE_PAIRS made ahead (their failures only mean a cell makes its own). */
  private refill(): void {
    while (this.spares.length < SPARE_PAIRS && this.state) {
      const name = `forge-net-spare-${randomBytes(6).toString('hex')}`;
      const made = this.create(name, {
        [LABEL_CELL]: name,
        [LABEL_RUN]: 'spare',
        [LABEL_RUNNER_PID]: String(process.pid),
        [LABEL_RUNNER_HOST]: hostname(),
      }).catch(() => null);
      this.spares.push(made);
    }
  }

  private async create(networkName: string, labels: Record<string, string>): Promise<CellNetwork> {
    const { egress, image } = await this.ensure();
    const created = await this.docker
      .createNetwork({
        Name: networkName,
        Driver: 'overlay',
        Internal: true,
        // A standalone container (the relay) may join it; tasks of other services may not be added to it.
        Attachable: true,
        CheckDuplicate: true,
        Labels: { ...labels, [LABEL_ROLE]: 'egress-overlay' },
      })
      .catch((e: Error) => {
        throw new SwarmUnavailableError(`the cell's overlay network could not be created: ${e.message.split('\n')[0]}`);
      });
    const networkId = created.id;
    let relayId = '';
    try {
      relayId = await this.createRelay(image, egress, labels);
      await this.docker.getNetwork(networkId).connect({ Container: relayId });
      await this.docker.getContainer(relayId).start();
      const info = (await this.docker.getContainer(relayId).inspect()) as {
        NetworkSettings?: { Networks?: Record<string, { IPAddress?: string; NetworkID?: string }> };
      };
      const networks = info.NetworkSettings?.Networks ?? {};
      const relayIp = Object.values(networks).find((n) => n.NetworkID === networkId)?.IPAddress;
      const relaySource = networks[egress.network.name]?.IPAddress;
      if (!relayIp || !relaySource) throw new Error('the relay has no address on the overlay or the egress bridge');
      return { networkId, networkName, relayIp, relayId, relaySource };
    } catch (e) {
      await this.detach({ networkId, relayId });
      throw new SwarmUnavailableError(`the cell's egress relay could not be started: ${(e as Error).message.split('\n')[0]}`);
    }
  }

  private ensure(): Promise<RelayState> {
    this.state ??= (async () => {
      const egress = await startDockerEgress(this.docker);
      try {
        return { egress, image: await this.relayImage() };
      } catch (e) {
        await stopDockerEgress(egress);
        throw e;
      }
    })();
    this.state.catch(() => (this.state = null));
    return this.state;
  }

  /** An image of the static busybox alone, built on the runner's engine once per busybox. */
  private async relayImage(): Promise<string> {
    const data = readFileSync(this.busybox);
    const tag = `${RELAY_REPOSITORY}:${createHash('sha256').update(data).digest('hex').slice(0, 16)}`;
    const found = await this.docker
      .getImage(tag)
      .inspect()
      .then(() => true)
      .catch(() => false);
    if (found) return tag;
    const context = dockerContext('FROM scratch\nCOPY busybox /bin/busybox\n', { name: 'busybox', mode: 0o755, data });
    const build = await this.docker.buildImage(Readable.from([context]), { t: tag, rm: true, forcerm: true });
    await followProgress(this.docker, build, 'building the egress relay image');
    return tag;
  }

  /** A relay, created (not started) on the egress bridge; its cell's overlay is joined before it starts. */
  private async createRelay(image: string, egress: DockerEgress, labels: Record<string, string>): Promise<string> {
    const name = `forge-egress-relay-${process.pid}-${randomBytes(4).toString('hex')}`;
    const container = await this.docker.createContainer({
      name,
      Image: image,
      // One process per connection (-l.. with -e), each piping to the proxy: it can reach nothing else.
      Cmd: [
        '/bin/busybox',
        'nc',
        LISTEN,
        '-p',
        String(RELAY_PORT),
        '-e',
        '/bin/busybox',
        'nc',
        egress.network.gateway,
        String(egress.port),
      ],
      User: '65534:65534',
      Labels: {
        ...labels,
        // gc removes it with the cells of a runner that is gone.
        [LABEL_CELL]: name,
        [LABEL_RUNNER_PID]: String(process.pid),
        [LABEL_RUNNER_HOST]: hostname(),
        [LABEL_ROLE]: 'egress-relay',
      },
      HostConfig: {
        NetworkMode: egress.network.name,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: true,
        Memory: 64 * 1024 * 1024,
        PidsLimit: 512,
        RestartPolicy: { Name: 'no' },
        // Docker turns forwarding on in every container namespace: the relay routes nothing.
        Sysctls: { 'net.ipv4.ip_forward': '0' },
      },
    });
    return container.id;
  }
}
