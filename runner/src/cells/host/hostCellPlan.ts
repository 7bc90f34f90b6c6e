import type { CellUser } from '../../hostguard/cellUser.js';
import type { CellSpec } from '../../protocol/cellSpec.js';
import type { CellWorktree } from '../../workspace/inspectWorktree.js';
import type { CellLauncher } from '../cellLauncher.js';
import type { HostCellEgress } from '../hostCellEgress.js';

/** What a host cell's run needs from a planner: the command, the launcher that runs it, what to say and undo. */
export interface HostCellPlan {
  /** The launcher's argv for the cell (bwrap and its arguments, or setpriv, or the command itself). */
  command: string[];
  launcher: CellLauncher;
  /** Said in the cell's isolation report. */
  warnings: string[];
  /** What the command leaves running must be killed after it (under bubblewrap the pid namespace's end does it). */
  reapLeftovers: boolean;
  /** Undoes what the plan made (a held worktree, a scratch directory, dependency layers). */
  release(): Promise<void>;
}

/** What both planners are given. */
export interface HostCellPlanInput {
  spec: CellSpec;
  worktree: CellWorktree | null;
  user: CellUser;
  /** A root runner's cells switch to this user; null when the runner is not root. */
  dropTo: { uid: number; gid: number; setpriv: string } | null;
  cellId: string;
  /** The spec's command as an argv. */
  argv: string[];
  egress: HostCellEgress | null;
  /** The runner's environment (only an allowlist of it reaches the cell). */
  hostEnv: NodeJS.ProcessEnv;
  stateDir: string;
  /** A launcher with this environment and working directory (a prewarmed one when `warm` and one is idle). */
  launcher(env: Record<string, string>, cwd: string, warm: boolean): CellLauncher;
}
