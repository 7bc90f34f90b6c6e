import type Docker from 'dockerode';
import { hostname } from 'node:os';
import { LABEL_CELL, LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from './dockerContainerSpec.js';
import type { GcItem } from '../workspace/staleWorktrees.js';

/** Finds (and unless dryRun removes) cell containers whose runner on this host is gone. */
export async function collectStaleContainers(docker: Docker, dryRun: boolean, isAlive: (pid: number) => boolean): Promise<GcItem[]> {
  const host = hostname();
  const items: GcItem[] = [];
  for (const c of await docker.listContainers({ all: true, filters: { label: [LABEL_CELL] } })) {
    // Cell containers are named after their cell; the label also covers renamed ones.
    const name = c.Labels[LABEL_CELL] || (c.Names[0]?.replace(/^\//, '') ?? c.Id.slice(0, 12));
    const pid = Number(c.Labels[LABEL_RUNNER_PID]);
    const owner = c.Labels[LABEL_RUNNER_HOST];
    if (owner !== host) {
      items.push({ kind: 'container', id: name, action: 'left', reason: `created by a runner on another host (${owner})` });
    } else if (Number.isInteger(pid) && isAlive(pid)) {
      items.push({ kind: 'container', id: name, action: 'left', reason: `in use by runner pid ${pid}` });
    } else {
      if (!dryRun) await docker.getContainer(c.Id).remove({ force: true, v: true });
      items.push({
        kind: 'container',
        id: name,
        action: dryRun ? 'would remove' : 'removed',
        reason: `its runner (pid ${pid}) is gone (${c.State})`,
      });
    }
  }
  return items;
}
