import { realpathSync } from 'node:fs';
import { holdWorktree } from '../../hostguard/pinnedDirectory.js';
import { buildBubblewrapArgs, CELL_HOME } from '../bubblewrapArgs.js';
import { buildCellEnvironment } from '../cellEnvironment.js';
import { prepareCellMounts } from '../cellWorktree.js';
import type { SandboxLayout } from '../sandboxLayout.js';
import type { HostCellPlan, HostCellPlanInput } from './hostCellPlan.js';

/**
 * A host cell under bubblewrap: everything cell-specific (environment, mounts, working
 * directory, the user switch) travels in bwrap's own arguments, so a prewarmed launcher that
 * carries nothing of the cell can run it.
 */
export async function planBubblewrapCell(
  c: HostCellPlanInput,
  sandbox: { bwrap: string; layout: SandboxLayout; caEnv: Record<string, string> },
): Promise<HostCellPlan> {
  const { spec, worktree, dropTo, egress } = c;
  const mounts = await prepareCellMounts(spec, worktree, (top) => top, {
    env: c.hostEnv,
    stateDir: c.stateDir,
    cellId: c.cellId,
    user: c.user,
  });
  let held: ReturnType<typeof holdWorktree> | null = null;
  try {
    // A root runner's bwrap binds the worktree it checked, held open, not whatever its path names by then.
    held = dropTo && worktree ? holdWorktree(worktree.top, worktree.identity, worktree.gitEntry !== null, worktree.gitIdentity) : null;
    // The proxy variables after the spec's, as docker cells get them.
    const cellEnv = buildCellEnvironment(c.hostEnv, CELL_HOME, '/tmp', { ...sandbox.caEnv, ...spec.env, ...egress?.env });
    const command = [
      sandbox.bwrap,
      ...buildBubblewrapArgs({
        layout: sandbox.layout,
        worktree: worktree?.top ?? null,
        gitMetadata: worktree?.gitEntry ?? null,
        egress: egress ? { socket: egress.socket, node: realpathSync(process.execPath) } : null,
        env: cellEnv,
        // Half the cell's memory, as a tmpfs defaults to half the machine's.
        shmBytes: Math.floor(spec.limits.memory_mib / 2) * 1024 * 1024,
        argv: c.argv,
        dropTo,
        ...(mounts.plan.worktree ? { worktreeTarget: mounts.plan.worktree.target } : {}),
        ...(held ? { held: { top: held.top, git: held.git } } : {}),
        deps: mounts.deps.mounts,
      }),
    ];
    const hold = held;
    return {
      command,
      launcher: c.launcher({ PATH: c.hostEnv.PATH ?? '' }, '/', true),
      warnings: [...mounts.deps.warnings],
      reapLeftovers: false,
      release: async () => {
        hold?.close();
        await mounts.deps.release();
      },
    };
  } catch (e) {
    held?.close();
    await mounts.deps.release();
    throw e;
  }
}
