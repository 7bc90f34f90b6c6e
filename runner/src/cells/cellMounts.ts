import { posix } from 'node:path';
import type { SharedDependency } from '../protocol/cellSpec.js';
import type { CellWorktree } from '../workspace/inspectWorktree.js';
import { isInside } from '../hostguard/pathInside.js';
import { refuseWorktreeLocation, SYSTEM_TREES, type WorktreeLocationFacts } from '../hostguard/worktreeLocation.js';

/** What a cell mounts besides its root: the worktree where the cell sees it, and shared dependencies. */
export interface CellMountPlan {
  worktree: { source: string; target: string } | null;
  /** The worktree's .git, read-only over its place in the cell. */
  gitMetadata: { source: string; target: string } | null;
  deps: { source: string; target: string; layer: SharedDependency['layer'] }[];
}

/** Where a dependency may go outside the worktree: the cell's own scratch (a tmpfs in every provider). */
export const DEP_SCRATCH = ['/tmp/forge-deps', '/tmp/forge-home'];

/** Cell paths a mount must not cover: the sandbox's own kernel filesystems. */
const KERNEL_TREES = ['/proc', '/sys', '/dev'];

/**
 * Pure: where each mount goes. `defaultTarget` is the provider's place for a worktree when the
 * spec gives none (host: its own path; docker and qemu: /work).
 */
export function planCellMounts(
  spec: { mount_at?: string | undefined; shared_deps: SharedDependency[] },
  worktree: Pick<CellWorktree, 'top' | 'gitEntry'> | null,
  defaultTarget: (top: string) => string,
): CellMountPlan {
  if (!worktree) return { worktree: null, gitMetadata: null, deps: spec.shared_deps.map((d) => ({ ...d })) };
  const target = spec.mount_at ?? defaultTarget(worktree.top);
  return {
    worktree: { source: worktree.top, target },
    gitMetadata: worktree.gitEntry ? { source: worktree.gitEntry, target: posix.join(target, posix.basename(worktree.gitEntry)) } : null,
    deps: spec.shared_deps.map((d) => ({ ...d })),
  };
}

/**
 * Pure: why this plan must not be mounted, or null. A mount target must leave the sandbox's
 * kernel filesystems alone and must not cover the worktree; two mounts must not share a target;
 * a worktree's place must not be a system directory the cell needs.
 */
export function refuseMountPlan(plan: CellMountPlan): string | null {
  const targets = [...(plan.worktree ? [plan.worktree.target] : []), ...plan.deps.map((d) => d.target)];
  for (const t of targets) {
    if (t === '/') return 'a cell mount cannot cover / (the whole cell filesystem)';
    const kernel = KERNEL_TREES.find((k) => isInside(t, k));
    if (kernel) return `a cell mount cannot go to ${t}: it is inside ${kernel}, which the sandbox provides`;
  }
  if (plan.worktree) {
    const system = SYSTEM_TREES.find((s) => isInside(plan.worktree!.target, s));
    if (system) return `mount_at ${plan.worktree.target} is inside the system directory ${system}; pass the repository's own path`;
    if (plan.worktree.target === '/.forge' || isInside(plan.worktree.target, '/.forge'))
      return 'mount_at /.forge is where qemu cells keep their own files';
    const over = plan.deps.find((d) => isInside(plan.worktree!.target, d.target));
    if (over) return `shared dependency target ${over.target} would cover the worktree at ${plan.worktree.target}`;
  }
  // A dependency goes inside the worktree (node_modules, .venv) or to the cell's own scratch
  // places; anywhere else it could cover what the cell's start runs as root (setpriv, libc).
  for (const d of plan.deps) {
    const inWorktree = plan.worktree !== null && isInside(d.target, plan.worktree.target) && d.target !== plan.worktree.target;
    if (inWorktree && posix.relative(plan.worktree!.target, d.target).split('/').includes('.git'))
      return `shared dependency target ${d.target} is inside the worktree's .git`;
    if (!inWorktree && !DEP_SCRATCH.some((p) => isInside(d.target, p) && d.target !== p)) {
      return `shared dependency target ${d.target} must be inside the worktree${plan.worktree ? ` (${plan.worktree.target})` : ''} or below ${DEP_SCRATCH.join(' or ')}`;
    }
  }
  const seen = new Set<string>();
  for (const t of targets) {
    if (seen.has(t)) return `two cell mounts go to ${t}`;
    seen.add(t);
  }
  // One dependency inside another would be mounted through the first one's content, whose
  // links the sandbox (running as root) would follow: /tmp/forge-deps/a/q -> ../../../etc.
  for (const d of plan.deps) {
    const outer = plan.deps.find((o) => o !== d && isInside(d.target, o.target));
    if (outer) return `shared dependency target ${d.target} is inside another one (${outer.target}); share the outer directory alone`;
  }
  return null;
}

/**
 * Pure: why a real host directory must not be shared read-only into a cell, or null. Sharing
 * shows the cell what is inside: it must not be or contain anything the cell must not see
 * (the masks, the runner's state and home), nor be a system tree.
 */
export function refuseSharedSource(realPath: string, facts: WorktreeLocationFacts): string | null {
  const why = refuseWorktreeLocation(realPath, facts);
  return why ? `shared dependency ${why.replace(/^worktree /, '')}` : null;
}
