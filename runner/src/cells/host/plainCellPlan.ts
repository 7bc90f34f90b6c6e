import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chownTree } from '../../hostguard/cellUser.js';
import { afterDropArgv, ROOT_STAGE_PATH, setprivArgs } from '../bubblewrapArgs.js';
import { buildCellEnvironment } from '../cellEnvironment.js';
import { vetCellMounts } from '../cellWorktree.js';
import type { HostCellPlan, HostCellPlanInput } from './hostCellPlan.js';

/**
 * A host cell without bubblewrap: a plain subprocess at the worktree's own path, with a private
 * HOME and TMPDIR in a scratch directory of its own (the cell user's, when the runner is root).
 * Shared dependencies and mount_at need bubblewrap and are said to be missing.
 */
export async function planPlainCell(c: HostCellPlanInput): Promise<HostCellPlan> {
  const { spec, worktree, dropTo } = c;
  vetCellMounts(spec, worktree, (top) => top, { env: c.hostEnv, stateDir: c.stateDir });
  const warnings: string[] = [];
  if (spec.shared_deps.length > 0 || (spec.mount_at && spec.mount_at !== worktree?.top))
    warnings.push("mount_at and shared dependencies need bubblewrap: the cell ran at the worktree's own path without them");
  const scratch = mkdtempSync(join(tmpdir(), `forge-${c.cellId}-`));
  try {
    for (const d of ['home', 'tmp', 'work']) mkdirSync(join(scratch, d));
    if (dropTo) chownTree(scratch, c.user);
    const cellEnv = buildCellEnvironment(c.hostEnv, join(scratch, 'home'), join(scratch, 'tmp'), spec.env);
    // A root launcher must not carry the spec's environment (LD_PRELOAD...): it is set after the drop.
    const command = dropTo ? [...setprivArgs(dropTo), ...afterDropArgv(cellEnv, c.argv)] : c.argv;
    const launcher = c.launcher(dropTo ? { PATH: ROOT_STAGE_PATH } : cellEnv, worktree?.top ?? join(scratch, 'work'), false);
    return { command, launcher, warnings, reapLeftovers: true, release: () => removeScratch(scratch) };
  } catch (e) {
    await removeScratch(scratch);
    throw e;
  }
}

/**
 * A plain cell's scratch directory, which the cell (running as the runner's user when the
 * runner is not root) may have made unreadable: given back its owner's permissions, then removed.
 */
async function removeScratch(dir: string): Promise<void> {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // chmod -R never follows a link it meets; a mode-000 directory is opened up before it is entered.
    // Loaded here only: evaluating execa costs every one-shot `cell run` ~20 ms.
    const { execa } = await import('execa');
    await execa('chmod', ['-R', 'u+rwX', '--', dir], { reject: false });
    rmSync(dir, { recursive: true, force: true });
  }
}
