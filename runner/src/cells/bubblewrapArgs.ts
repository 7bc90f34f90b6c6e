import type { SandboxLayout } from './sandboxLayout.js';

export const CELL_HOME = '/tmp/forge-home';
export const CELL_SCRATCH = '/tmp/forge-work';

export interface BubblewrapPlan {
  layout: SandboxLayout;
  /** Mounted read-write at the same path; unset: the cell works in a private scratch dir. */
  worktree: string | null;
  /** Git metadata inside the worktree (.git dir or file), mounted read-only over itself. */
  gitMetadata: string | null;
  shareNet: boolean;
  /** The cell's whole environment: bwrap clears its own and sets exactly this. */
  env: Record<string, string>;
  argv: string[];
}

/**
 * Pure: the bwrap command line for one cell. Order matters: bwrap applies mounts in order, so
 * masks come after the read-only root and the worktree comes after the masks (it may live
 * under /tmp or a home directory).
 */
export function buildBubblewrapArgs(plan: BubblewrapPlan): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const dir of plan.layout.tmpfsMasks) args.push('--tmpfs', dir);
  for (const dir of plan.layout.reexposed) args.push('--ro-bind', dir, dir);
  // After the re-exposed toolchain dirs, so credential files inside them stay hidden.
  for (const file of plan.layout.nullMasks) args.push('--ro-bind', '/dev/null', file);
  if (!plan.layout.tmpfsMasks.includes('/tmp')) args.push('--tmpfs', '/tmp');
  args.push('--dir', CELL_HOME);
  let workdir = CELL_SCRATCH;
  if (plan.worktree) {
    args.push('--bind', plan.worktree, plan.worktree);
    // The host runs git on this worktree after the cell: a writable .git would let the cell
    // plant hooks or core.fsmonitor commands that the host would then execute.
    if (plan.gitMetadata) args.push('--ro-bind', plan.gitMetadata, plan.gitMetadata);
    workdir = plan.worktree;
  } else {
    args.push('--dir', CELL_SCRATCH);
  }
  args.push('--chdir', workdir);
  args.push('--unshare-all');
  if (plan.shareNet) args.push('--share-net');
  args.push('--hostname', 'forge-cell', '--die-with-parent', '--new-session', '--cap-drop', 'ALL');
  args.push('--clearenv');
  for (const [name, value] of Object.entries(plan.env)) args.push('--setenv', name, value);
  args.push('--', ...plan.argv);
  return args;
}
