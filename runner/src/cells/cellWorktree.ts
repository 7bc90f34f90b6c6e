import type { CellSpec } from '../protocol/cellSpec.js';
import type { CellResult } from '../protocol/cellResult.js';
import { captureWorktreeDiff } from '../workspace/captureWorktreeDiff.js';
import { type CellWorktree, resolveCellWorktree } from '../workspace/inspectWorktree.js';
import { HOST_PATH_MAX, neutralizeHazards } from '../workspace/neutralizeHazards.js';
import { type CellUser, cellUserFor } from './cellUser.js';
import { probeSandboxLayout } from './sandboxLayout.js';
import { refuseWorktreeLocation } from './worktreeLocation.js';

export interface PreparedWorktree {
  worktree: CellWorktree | null;
  user: CellUser;
}

/**
 * Before a cell, on every provider: the worktree resolved and vetted (no system or masked
 * path, git data the cell cannot write) and the unprivileged user the command runs as.
 * Throws InputError, with nothing run, when either is refused.
 */
export async function prepareCellWorktree(spec: Pick<CellSpec, 'worktree' | 'capture_diff'>, env: NodeJS.ProcessEnv, stateDir: string): Promise<PreparedWorktree> {
  const worktree = await resolveCellWorktree(spec, (top) => {
    const layout = probeSandboxLayout(env);
    return refuseWorktreeLocation(top, { masked: [...layout.tmpfsMasks, ...layout.nullMasks], runnerHome: env.HOME, stateDir });
  });
  return { worktree, user: cellUserFor(worktree?.top ?? null, env) };
}

export interface AfterCell {
  diff: CellResult['diff'];
  neutralized: CellResult['neutralized'];
  warnings: string[];
}

/**
 * After a cell, on every provider, before anything else reads the tree: hazards the cell left
 * (setuid files, device nodes, FIFOs, sockets) are neutralized, then the diff is captured
 * (bounded; never throws: a capture that fails says so in the result).
 */
export async function collectAfterCell(worktree: CellWorktree | null, captureDiff: boolean): Promise<AfterCell> {
  if (!worktree) return { diff: null, neutralized: [], warnings: [] };
  const scan = neutralizeHazards(worktree.top, { skip: worktree.gitEntry ? ['.git'] : [] });
  const warnings: string[] = [];
  if (scan.neutralized.length > 0) {
    warnings.push(`the cell left ${scan.neutralized.length} hazardous entr${scan.neutralized.length === 1 ? 'y' : 'ies'} in the worktree (setuid/setgid files, device nodes, FIFOs or sockets); neutralized: ${scan.neutralized.slice(0, 5).map((n) => n.path).join(', ')}${scan.neutralized.length > 5 ? ', ...' : ''}`);
  }
  if (scan.incomplete) warnings.push(`the scan for hazardous entries stopped early (${scan.incomplete}): entries beyond it were not checked`);
  const diff = captureDiff && worktree.source ? await captureWorktreeDiff(worktree.source) : null;
  // Git names files by path: what lies deeper than PATH_MAX is in no listing it makes.
  if (diff && scan.tooLong > 0) diff.incomplete ??= `${scan.tooLong} entr${scan.tooLong === 1 ? 'y has a path' : 'ies have paths'} longer than ${HOST_PATH_MAX} bytes, which git cannot see: the diff does not show them`;
  if (diff?.incomplete) warnings.push(`diff incomplete: ${diff.incomplete}`);
  return { diff, neutralized: scan.neutralized, warnings };
}
