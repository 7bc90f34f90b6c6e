import type Docker from 'dockerode';
import { hostname } from 'node:os';
import { LABEL_CELL, LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from '../dockerContainerSpec.js';
import type { GcItem } from '../../workspace/staleWorktrees.js';

interface Labelled {
  ID?: string;
  Spec?: { Name?: string; Labels?: Record<string, string> };
}

/**
 * Finds (and unless dryRun removes) the services, overlays, configs and secrets of swarm cells whose
 * runner on this host is gone. Removing a service ends its task wherever it runs; the node
 * then removes the container. Needs the engine to be a swarm manager; [] otherwise.
 */
export async function collectStaleSwarmCells(docker: Docker, dryRun: boolean, isAlive: (pid: number) => boolean): Promise<GcItem[]> {
  const info = (await docker.info()) as { Swarm?: { ControlAvailable?: boolean } };
  if (!info.Swarm?.ControlAvailable) return [];
  const host = hostname();
  const filters = { label: [LABEL_CELL] };
  const verdict = (labels: Record<string, string>): { stale: boolean; reason: string } => {
    const pid = Number(labels[LABEL_RUNNER_PID]);
    const owner = labels[LABEL_RUNNER_HOST];
    if (owner !== host) return { stale: false, reason: `created by a runner on another host (${owner})` };
    if (Number.isInteger(pid) && isAlive(pid)) return { stale: false, reason: `in use by runner pid ${pid}` };
    return { stale: true, reason: `its runner (pid ${pid}) is gone` };
  };
  const items: GcItem[] = [];
  const kinds: { what: string; list: () => Promise<Labelled[]>; remove: (id: string) => Promise<unknown> }[] = [
    {
      what: 'service',
      list: () => docker.listServices({ filters }) as Promise<Labelled[]>,
      remove: (id) => docker.getService(id).remove(),
    },
    {
      // An allow_net cell's own overlay (the relay, a container, went before: gc removes containers first).
      what: 'network',
      list: async () =>
        ((await docker.listNetworks({ filters })) as { Id: string; Name: string; Labels?: Record<string, string> }[]).map((n) => ({
          ID: n.Id,
          Spec: { Name: n.Name, Labels: n.Labels ?? {} },
        })),
      remove: (id) => docker.getNetwork(id).remove(),
    },
    { what: 'config', list: () => docker.listConfigs({ filters }) as Promise<Labelled[]>, remove: (id) => docker.getConfig(id).remove() },
    { what: 'secret', list: () => docker.listSecrets({ filters }) as Promise<Labelled[]>, remove: (id) => docker.getSecret(id).remove() },
  ];
  // Services first: a config or secret goes only once no service names it.
  for (const k of kinds) {
    for (const o of await k.list()) {
      const labels = o.Spec?.Labels ?? {};
      const { stale, reason } = verdict(labels);
      const id = `${k.what} ${o.Spec?.Name ?? o.ID}`;
      if (!stale) {
        items.push({ kind: 'swarm', id, action: 'left', reason });
        continue;
      }
      if (!dryRun) await k.remove(o.ID!).catch(() => undefined);
      items.push({ kind: 'swarm', id, action: dryRun ? 'would remove' : 'removed', reason });
    }
  }
  return items;
}
