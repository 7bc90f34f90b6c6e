import { execa } from 'execa';
import { lchownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CellMountPlan } from './cellMounts.js';

/** A shared dependency as the provider mounts it: a host directory at a cell path. */
export interface DependencyMount {
  source: string;
  target: string;
  writable: boolean;
  /** How it is mounted, for the isolation report. */
  how: 'read-only + overlay' | 'read-only';
}

export interface MountedDependencies {
  mounts: DependencyMount[];
  /** Said in the isolation report when a layer could not be made. */
  warnings: string[];
  /** Unmounts and removes every layer; never throws. */
  release(): Promise<void>;
}

/** Each cell's writable layers live in a tmpfs of this size: writes are bounded and discarded. */
const LAYER_TMPFS = 'size=1g,mode=0700';
/** Cache directories tools write inside node_modules; given to the cell user when present. */
const CACHE_DIRS = ['.cache', '.vite', '.vitest'];
const MAX_CACHE_ENTRIES = 5000;

/**
 * Makes each shared dependency available to one cell. An overlay layer (a root runner only:
 * mounting needs it) puts a kernel overlay over the read-only source with its upper layer in a
 * private tmpfs, so tools that write caches into node_modules work and the checkout never
 * changes; the layer goes with the cell. Elsewhere the source is mounted read-only.
 */
export async function mountDependencyLayers(plan: CellMountPlan, layersDir: string, cellId: string, user: { uid: number; gid: number }): Promise<MountedDependencies> {
  const mounts: DependencyMount[] = [];
  const warnings: string[] = [];
  const made: string[] = [];
  const release = async () => {
    for (const dir of made.reverse()) {
      // Lazy when busy: a process of the cell may still be on its way out.
      for (const m of [join(dir, 'merged'), dir]) {
        if ((await execa('umount', [m], { reject: false })).exitCode !== 0) await execa('umount', ['-l', m], { reject: false });
      }
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // A layer that will not go is left to gc (it lives in the state directory).
      }
    }
  };
  const root = (process.getuid?.() ?? 0) === 0;
  try {
    for (const [i, d] of plan.deps.entries()) {
      if (d.layer === 'read-only' || !root || /[,:\\\n]/.test(d.source)) {
        if (d.layer === 'overlay' && !root) warnings.push(`${d.source}: read-only without a writable layer (mounting an overlay needs a root runner)`);
        mounts.push({ source: d.source, target: d.target, writable: false, how: 'read-only' });
        continue;
      }
      mkdirSync(layersDir, { recursive: true, mode: 0o700 });
      // The runner's pid in the name: gc removes the layers of a runner that is gone.
      const dir = mkdtempSync(join(layersDir, `${process.pid}-${cellId}-${i}-`));
      made.push(dir);
      const tmpfs = await execa('mount', ['-t', 'tmpfs', '-o', LAYER_TMPFS, 'forge-layer', dir], { reject: false });
      if (tmpfs.exitCode !== 0) throw new Error(`mount tmpfs: ${tmpfs.stderr.trim()}`);
      for (const sub of ['upper', 'work', 'merged']) mkdirSync(join(dir, sub), { mode: 0o755 });
      const overlay = await execa('mount', ['-t', 'overlay', 'forge-deps', '-o', `lowerdir=${d.source},upperdir=${join(dir, 'upper')},workdir=${join(dir, 'work')}`, join(dir, 'merged')], { reject: false });
      if (overlay.exitCode !== 0) {
        warnings.push(`${d.source}: read-only without a writable layer (overlay mount failed: ${overlay.stderr.trim().split('\n')[0]})`);
        mounts.push({ source: d.source, target: d.target, writable: false, how: 'read-only' });
        continue;
      }
      // Only the top directory and the tool caches change owner (a copy-up of their metadata):
      // the cell can add caches, the packages themselves stay as installed.
      const merged = join(dir, 'merged');
      lchownSync(merged, user.uid, user.gid);
      for (const cache of CACHE_DIRS) chownBounded(join(merged, cache), user);
      mounts.push({ source: merged, target: d.target, writable: true, how: 'read-only + overlay' });
    }
  } catch (e) {
    await release();
    throw e;
  }
  return { mounts, warnings, release };
}

function chownBounded(dir: string, user: { uid: number; gid: number }): void {
  try {
    if (!lstatSync(dir).isDirectory()) return;
  } catch {
    return;
  }
  const stack = [dir];
  let budget = MAX_CACHE_ENTRIES;
  while (stack.length > 0 && budget > 0) {
    const current = stack.pop()!;
    lchownSync(current, user.uid, user.gid);
    for (const e of readdirSync(current, { withFileTypes: true })) {
      if (--budget <= 0) break;
      const p = join(current, e.name);
      if (e.isDirectory()) stack.push(p);
      else lchownSync(p, user.uid, user.gid);
    }
  }
}
