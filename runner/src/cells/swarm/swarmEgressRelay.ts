import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { LABEL_CELL, LABEL_RUN, LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from '../dockerContainerSpec.js';
import { type DockerEgress, startDockerEgress, stopDockerEgress } from '../dockerEgress.js';
import { SwarmUnavailableError } from './swarmUnavailable.js';
import { writeTar } from './tarArchive.js';

/**
 * How a swarm cell with allow_net reaches the runner's egress proxy, and nothing else.
 *
 * The proxy listens where docker cells reach it: on the gateway of the manager engine's
 * internal `forge-egress` bridge, behind the iptables guard that lets only its port through.
 * A swarm task cannot join a bridge network, so one relay container per runner sits on that
 * bridge, on the runner's own engine (the manager), and carries TCP from port 3128 to the
 * proxy's port; nothing else. Each allow_net cell gets an internal, attachable overlay of its
 * own, created for the cell and removed after it: its task and the relay are the only
 * members, so no cell can reach another cell's task (overlays have no switch between their
 * members), the overlay has no route out, and the relay does not route between its networks
 * (its namespace forwards nothing). The proxy then checks the cell's token and allowlist, as
 * for docker and qemu cells. A standalone container rather than a service: a task cannot
 * reach the bridge, and per-cell overlays would need the service updated for each cell.
 */

/** The relay's port on each cell's overlay (the cell's HTTP(S)_PROXY). */
export const RELAY_PORT = 3128;
export const RELAY_REPOSITORY = 'forge-egress-relay';

/** One cell's overlay, with the relay's address on it. */
export interface CellNetwork {
  networkId: string;
  networkName: string;
  relayIp: string;
}

interface RelayState {
  egress: DockerEgress;
  containerId: string;
  name: string;
}

/** Overlays made ahead of the cells that take them. */
const SPARE_OVERLAYS = 2;
/** On each overlay: the relay it was made for (its runner's). */
export const LABEL_RELAY = 'forge.relay';

export class SwarmEgressRelay {
  private state: Promise<RelayState> | null = null;
  private readonly spares: Promise<CellNetwork | null>[] = [];

  /** `docker` is the manager, which must be the runner's own engine (see egressRefusal). */
  constructor(
    private readonly docker: Docker,
    private readonly busybox: string,
  ) {}

  /** The proxy behind the relay (grants and revocations go to it). */
  async egress(): Promise<DockerEgress> {
    return (await this.ensure()).egress;
  }

  /**
   * The cell's own overlay, with the relay on it; removed by detach once the cell's task is
   * gone. A fresh one made ahead when there is one (never one another cell had): making an
   * overlay and putting the relay on it takes most of a second, off the cell's path this way.
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

  /** Keeps SPARE_OVERLAYS made ahead (their failures only mean a cell makes its own). */
  private refill(): void {
    while (this.spares.length < SPARE_OVERLAYS && this.state) {
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
    const { containerId, name: relayName } = await this.ensure();
    const created = await this.docker
      .createNetwork({
        Name: networkName,
        Driver: 'overlay',
        Internal: true,
        // A standalone container (the relay) may join it; tasks of other services may not be added to it.
        Attachable: true,
        CheckDuplicate: true,
        Labels: { ...labels, [LABEL_RELAY]: relayName },
      })
      .catch((e: Error) => {
        throw new SwarmUnavailableError(`the cell's overlay network could not be created: ${e.message.split('\n')[0]}`);
      });
    const networkId = created.id;
    try {
      await this.docker.getNetwork(networkId).connect({ Container: containerId });
      const info = (await this.docker.getContainer(containerId).inspect()) as {
        NetworkSettings?: { Networks?: Record<string, { IPAddress?: string; NetworkID?: string }> };
      };
      const relayIp = Object.values(info.NetworkSettings?.Networks ?? {}).find((n) => n.NetworkID === networkId)?.IPAddress;
      if (!relayIp) throw new Error('the relay has no address on it');
      return { networkId, networkName, relayIp };
    } catch (e) {
      await this.detach({ networkId, networkName, relayIp: '' });
      throw new SwarmUnavailableError(`the egress relay could not join the cell's overlay: ${(e as Error).message.split('\n')[0]}`);
    }
  }

  /** Takes the relay off the cell's overlay and removes it (after the cell's service is gone). */
  async detach(net: CellNetwork): Promise<void> {
    const state = await this.state?.catch(() => null);
    const network = this.docker.getNetwork(net.networkId);
    if (state) await network.disconnect({ Container: state.containerId, Force: true }).catch(() => undefined);
    // A worker drops its end of the overlay a moment after its task is removed.
    for (let i = 0; i < 120; i++) {
      try {
        await network.remove();
        return;
      } catch (e) {
        if ((e as { statusCode?: number }).statusCode === 404) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /** Removes the overlays made ahead, the relay and closes the proxy. */
  async close(): Promise<void> {
    const spares = this.spares.splice(0);
    const state = await this.state?.catch(() => null);
    for (const spare of spares) {
      const net = await spare;
      if (net) await this.detach(net);
    }
    this.state = null;
    if (!state) return;
    await this.docker
      .getContainer(state.containerId)
      .remove({ force: true })
      .catch(() => undefined);
    await stopDockerEgress(state.egress);
  }

  private ensure(): Promise<RelayState> {
    this.state ??= (async () => {
      const egress = await startDockerEgress(this.docker);
      try {
        const image = await this.relayImage();
        const name = `forge-egress-relay-${process.pid}-${randomBytes(4).toString('hex')}`;
        const containerId = await this.startRelay(image, egress, name);
        return { egress, containerId, name };
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
    const now = Math.floor(Date.now() / 1000);
    const context = writeTar([
      {
        name: 'Dockerfile',
        type: 'file',
        mode: 0o644,
        uid: 0,
        gid: 0,
        mtime: now,
        data: Buffer.from('FROM scratch\nCOPY busybox /bin/busybox\n'),
      },
      { name: 'busybox', type: 'file', mode: 0o755, uid: 0, gid: 0, mtime: now, data },
    ]);
    const build = await this.docker.buildImage(Readable.from([context]), { t: tag, rm: true, forcerm: true });
    const events = await new Promise<Record<string, unknown>[]>((resolve, reject) =>
      this.docker.modem.followProgress(build, (err: Error | null, out: Record<string, unknown>[]) => (err ? reject(err) : resolve(out))),
    );
    const failed = events.find((e) => e.error || e.errorDetail);
    if (failed) throw new SwarmUnavailableError(`building the egress relay image failed: ${String(failed.error).split('\n')[0]}`);
    return tag;
  }

  private async startRelay(image: string, egress: DockerEgress, name: string): Promise<string> {
    await this.docker
      .getContainer(name)
      .remove({ force: true })
      .catch(() => undefined);
    const container = await this.docker.createContainer({
      name,
      Image: image,
      // One process per connection (-ll with -e), each piping to the proxy: it can reach nothing else.
      Cmd: ['/bin/busybox', 'nc', '-ll', '-p', String(RELAY_PORT), '-e', '/bin/busybox', 'nc', egress.network.gateway, String(egress.port)],
      User: '65534:65534',
      Labels: {
        // gc removes it with the cells of a runner that is gone.
        [LABEL_CELL]: name,
        [LABEL_RUNNER_PID]: String(process.pid),
        [LABEL_RUNNER_HOST]: hostname(),
        'forge.role': 'egress-relay',
      },
      HostConfig: {
        NetworkMode: egress.network.name,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: true,
        Memory: 64 * 1024 * 1024,
        PidsLimit: 512,
        RestartPolicy: { Name: 'no' },
      },
    });
    await container.start();
    return container.id;
  }
}
