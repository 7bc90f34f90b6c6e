import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { GcItem } from '../../workspace/staleWorktrees.js';

/**
 * qemu cell directories (sockets, per-cell initramfs, status) whose runner is gone. Their
 * processes died with the runner (bubblewrap --die-with-parent); only files can remain.
 */
export function collectStaleVmCells(stateDir: string, dryRun: boolean, isAlive: (pid: number) => boolean): GcItem[] {
  const root = join(stateDir, 'qemu', 'cells');
  if (!existsSync(root)) return [];
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
    if (!dryRun) rmSync(dir, { recursive: true, force: true });
    items.push({
      kind: 'vm',
      id: name,
      action: dryRun ? 'would remove' : 'removed',
      reason: `its runner (pid ${Number.isNaN(pid) ? '?' : pid}) is gone`,
    });
  }
  return items;
}
