import Docker from 'dockerode';
import { collectStaleDependencyLayers } from './staleDependencyLayers.js';
import { resolveRepo } from '../workspace/attemptWorktree.js';
import { collectStaleWorktrees, type GcItem, processAlive } from '../workspace/staleWorktrees.js';
import { runnerStateDir } from './cellIdentity.js';
import { collectStaleVmCells } from './qemu/staleVmCells.js';
import { collectStaleContainers } from './staleContainers.js';
import { collectStaleSwarmCells } from './swarm/staleSwarmCells.js';

/** What crashed runners left: attempt worktrees of a repo, cell containers, qemu cell dirs (shared by `gc` and the extension). */
export async function collectGarbage(repoDir: string, dryRun: boolean): Promise<{ repo: string; items: GcItem[]; notes: string[] }> {
  const notes: string[] = [];
  const items: GcItem[] = [];
  const repo = await resolveRepo(repoDir);
  items.push(...(await collectStaleWorktrees(repo, dryRun)));
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  if (
    await docker.ping().then(
      () => true,
      () => false,
    )
  ) {
    items.push(...(await collectStaleContainers(docker, dryRun, processAlive)));
    // Swarm cells when this engine manages a swarm (DOCKER_HOST may name another manager).
    items.push(...(await collectStaleSwarmCells(docker, dryRun, processAlive)));
  } else {
    notes.push('no Docker Engine answers: containers not checked');
  }
  items.push(...collectStaleVmCells(runnerStateDir(), dryRun, processAlive));
  items.push(...(await collectStaleDependencyLayers(runnerStateDir(), dryRun, processAlive)));
  return { repo, items, notes };
}
