import Docker from 'dockerode';
import { collectStaleDependencyLayers } from './staleDependencyLayers.js';
import { resolveRepo } from '../workspace/attemptWorktree.js';
import { collectStaleWorktrees, type GcItem, processAlive } from '../workspace/staleWorktrees.js';
import { runnerStateDir } from './cellIdentity.js';
import { collectStaleVmCells } from './qemu/staleVmCells.js';
import { collectStaleContainers } from './staleContainers.js';
import { collectStaleSwarmCells } from './swarm/staleSwarmCells.js';
import { connectSwarmManager } from './swarm/swarmManager.js';

/**
 * What crashed runners left: attempt worktrees of a repo, cell containers, qemu cell dirs
 * (shared by `gc` and the extension), and swarm cells on the manager the swarm provider uses
 * (`dockerHost`, else DOCKER_HOST, else the local engine when it manages a swarm).
 */
export async function collectGarbage(
  repoDir: string,
  dryRun: boolean,
  options: { dockerHost?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ repo: string; items: GcItem[]; notes: string[] }> {
  const env = options.env ?? process.env;
  const notes: string[] = [];
  const items: GcItem[] = [];
  const repo = await resolveRepo(repoDir);
  items.push(...(await collectStaleWorktrees(repo, dryRun)));
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  const localUp = await docker.ping().then(
    () => true,
    () => false,
  );
  if (localUp) {
    items.push(...(await collectStaleContainers(docker, dryRun, processAlive)));
  } else {
    notes.push('no Docker Engine answers: containers not checked');
  }
  const remote = options.dockerHost ?? env.DOCKER_HOST;
  if (remote && remote !== '' && remote !== 'unix:///var/run/docker.sock') {
    let manager: ReturnType<typeof connectSwarmManager> | null = null;
    try {
      manager = connectSwarmManager(options.dockerHost, env);
    } catch (e) {
      notes.push(`swarm cells not checked: ${(e as Error).message}`);
    }
    if (manager) {
      const found = await collectStaleSwarmCells(manager.docker, dryRun, processAlive).catch((e: Error) => {
        notes.push(`swarm cells not checked: no manager answers at ${manager.name} (${e.message.split('\n')[0]})`);
        return [];
      });
      items.push(...found.map((i) => ({ ...i, id: `${i.id} on ${manager.name}` })));
    }
  } else if (localUp) {
    // Swarm cells when this engine manages a swarm.
    items.push(...(await collectStaleSwarmCells(docker, dryRun, processAlive)));
  }
  items.push(...collectStaleVmCells(runnerStateDir(), dryRun, processAlive));
  items.push(...(await collectStaleDependencyLayers(runnerStateDir(), dryRun, processAlive)));
  return { repo, items, notes };
}
