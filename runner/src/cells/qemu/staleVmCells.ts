import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import type { GcItem } from '../../workspace/staleWorktrees.js';
import { removeVmDir } from './handoverMounts.js';

/**
 * qemu cell and pooled VM directories (sockets, initramfs, status) whose runner is gone.
 * Their processes died with the runner (bubblewrap --die-with-parent); files remain, and a
 * pooled VM's hand-over mounts (a worktree among them): those are unmounted first, and a
 * directory that still has a mount is left, never removed through it.
 */
export function collectStaleVmCells(stateDir: string, dryRun: boolean, isAlive: (pid: number) => boolean): GcItem[] {
  if (!existsSync(join(stateDir, 'qemu', 'cells'))) return [];
  // Mount points are listed by real path: a state directory reached through a symlink must match them.
  const root = realpathSync(join(stateDir, 'qemu', 'cells'));
  const items: GcItem[] = [];
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    let pid = NaN;
    try {
      pid = Number(readFileSync(join(dir, 'runner.pid'), 'utf8'));
    } catch {
      /* no pid file: a bench/probe dir or a half-made one */
    }
    if (Number.isInteger(pid) && isAlive(pid)) {
      items.push({ kind: 'vm', id: name, action: 'left', reason: `in use by runner pid ${pid}` });
      continue;
    }
    const left = dryRun ? null : removeVmDir(dir);
    if (left) {
      items.push({ kind: 'vm', id: name, action: 'left', reason: `${left} (umount it, then run gc again)` });
      continue;
    }
    items.push({
      kind: 'vm',
      id: name,
      action: dryRun ? 'would remove' : 'removed',
      reason: `its runner (pid ${Number.isNaN(pid) ? '?' : pid}) is gone`,
    });
  }
  return items;
}
