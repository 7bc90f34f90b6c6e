import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { GcItem } from '../workspace/staleWorktrees.js';
import { removeLayer } from './dependencyLayers.js';

/**
 * Writable dependency layers (a tmpfs with an overlay on it, under <state>/layers, named
 * "<runner pid>-<cell id>-...") whose runner is gone: a crash between mounting and releasing
 * leaves the mounts. They are unmounted, then removed.
 */
export async function collectStaleDependencyLayers(
  stateDir: string,
  dryRun: boolean,
  isAlive: (pid: number) => boolean,
): Promise<GcItem[]> {
  const root = join(stateDir, 'layers');
  if (!existsSync(root)) return [];
  const items: GcItem[] = [];
  for (const name of readdirSync(root)) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (Number.isInteger(pid) && isAlive(pid)) {
      items.push({ kind: 'layer', id: name, action: 'left', reason: `in use by runner pid ${pid}` });
      continue;
    }
    if (!dryRun) await removeLayer(join(root, name));
    items.push({
      kind: 'layer',
      id: name,
      action: dryRun ? 'would remove' : 'removed',
      reason: `its runner (pid ${Number.isNaN(pid) ? '?' : pid}) is gone`,
    });
  }
  return items;
}
