import { execa } from 'execa';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { GcItem } from '../workspace/staleWorktrees.js';

/**
 * Writable dependency layers (a tmpfs with an overlay on it, under <state>/layers, named
 * "<runner pid>-<cell id>-...") whose runner is gone: a crash between mounting and releasing
 * leaves the mounts. They are unmounted, then removed.
 */
export async function collectStaleDependencyLayers(stateDir: string, dryRun: boolean, isAlive: (pid: number) => boolean): Promise<GcItem[]> {
  const root = join(stateDir, 'layers');
  if (!existsSync(root)) return [];
  const items: GcItem[] = [];
  for (const name of readdirSync(root)) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (Number.isInteger(pid) && isAlive(pid)) {
      items.push({ kind: 'layer', id: name, action: 'left', reason: `in use by runner pid ${pid}` });
      continue;
    }
    if (!dryRun) {
      const dir = join(root, name);
      for (const m of [join(dir, 'merged'), dir]) {
        if ((await execa('umount', [m], { reject: false })).exitCode !== 0) await execa('umount', ['-l', m], { reject: false });
      }
      rmSync(dir, { recursive: true, force: true });
    }
    items.push({ kind: 'layer', id: name, action: dryRun ? 'would remove' : 'removed', reason: `its runner (pid ${Number.isNaN(pid) ? '?' : pid}) is gone` });
  }
  return items;
}
