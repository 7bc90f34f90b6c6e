import Docker from 'dockerode';
import { collectStaleDependencyLayers } from './staleDependencyLayers.js';
import { resolveRepo } from '../workspace/attemptWorktree.js';
import { collectStaleWorktrees, type GcItem, processAlive } from '../workspace/staleWorktrees.js';
import { runnerStateDir } from './cellIdentity.js';
import { collectStaleVmCells } from './qemu/staleVmCells.js';
import { collectStaleContainers } from './staleContainers.js';
import { collectStaleSwarmCells } from './swarm/staleSwarmCells.js';
import { connectSwarmManager } from './swarm/swarmManager.js';
import { collectStaleRegistryTags, liveServiceDigests } from './swarm/staleRegistryTags.js';
import { SwarmRegistry } from './swarm/swarmRegistry.js';

/**
 * What crashed runners left: attempt worktrees of a repo, cell containers, qemu cell dirs
 * (shared by `gc` and the extension), swarm cells on the manager the swarm provider uses
 * (`dockerHost`, else DOCKER_HOST, else the local engine when it manages a swarm), and their
 * images in the swarm registry (`registry`, else FORGE_SWARM_REGISTRY; none named: not looked at).
 */
export async function collectGarbage(
  repoDir: string,
  dryRun: boolean,
  options: { dockerHost?: string; registry?: string; env?: NodeJS.ProcessEnv } = {},
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
  // The engine that manages the swarm, if any: the registry's judge asks it which images live services use.
  let swarmDocker: Docker | null = null;
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
      swarmDocker = manager.docker;
    }
  } else if (localUp) {
    // Swarm cells when this engine manages a swarm.
    items.push(...(await collectStaleSwarmCells(docker, dryRun, processAlive)));
    swarmDocker = docker;
  }
  const stateDir = runnerStateDir(env);
  items.push(...collectStaleVmCells(stateDir, dryRun, processAlive));
  items.push(...(await collectStaleDependencyLayers(stateDir, dryRun, processAlive)));
  const rawRegistry = options.registry ?? env.FORGE_SWARM_REGISTRY;
  if (rawRegistry && rawRegistry !== '') {
    // After the swarm cells: their services are gone (or, dry, judged gone) before their images are.
    const registry = new SwarmRegistry(rawRegistry);
    let address: string | null = null;
    try {
      address = registry.address();
    } catch (e) {
      notes.push(`registry not checked: ${(e as Error).message}`);
    }
    if (address) {
      const serviceDigests = swarmDocker ? await liveServiceDigests(swarmDocker, processAlive).catch(() => null) : null;
      const swept = await collectStaleRegistryTags({
        registry: address,
        url: (path) => registry.url(address, path),
        stateDir,
        dryRun,
        isAlive: processAlive,
        serviceDigests,
      });
      items.push(...swept.items);
      notes.push(...swept.notes);
    }
  }
  return { repo, items, notes };
}
