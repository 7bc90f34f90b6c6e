import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, lchownSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { descriptorPath, lstatAt, openDirectoryAt } from '../hostguard/beneath.js';
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
/** Cache directories tools write inside node_modules. */
export const CACHE_DIRS = ['.cache', '.vite', '.vitest'];

/**
 * Opens a real directory path one component at a time without following any link, so what
 * gets mounted is what was vetted even if a component is swapped for a link meanwhile.
 */
export function openDirNoFollow(path: string): number {
  let fd = openSync('/', constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const part of path.split('/').filter(Boolean)) {
      const next = openDirectoryAt(fd, part, constants.O_RDONLY);
      closeSync(fd);
      fd = next;
    }
    if (!fstatSync(fd).isDirectory()) throw new Error(`${path} is not a directory`);
    return fd;
  } catch (e) {
    closeSync(fd);
    throw new Error(
      `${path} changed while it was being shared (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); share only directories nothing else is changing`,
    );
  }
}

/**
 * Unmounts a layer (its overlay, then its tmpfs) and removes its directory. Lazy when busy:
 * a process of the cell may still be on its way out.
 */
export async function removeLayer(dir: string): Promise<void> {
  // execa is loaded on first use (see bubblewrapProbe.ts): most cells have no layer.
  const { execa } = await import('execa');
  for (const m of [join(dir, 'merged'), dir]) {
    if ((await execa('umount', [m], { reject: false })).exitCode !== 0) await execa('umount', ['-l', m], { reject: false });
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Marks an upper-layer directory opaque (trusted.overlay.opaque=y): the lower directory of the
 * same name is hidden. Node has no setxattr; python3 (a dependency of the runner's machines)
 * does. Without it the directory merges with the installed one, which is then only partly writable.
 */
async function markOpaque(dir: string): Promise<void> {
  const { execa } = await import('execa');
  await execa('python3', ['-c', 'import os, sys; os.setxattr(sys.argv[1], "trusted.overlay.opaque", b"y", follow_symlinks=False)', dir], {
    reject: false,
  });
}

/** mount(8) with `fd` as its descriptor 3 and no path canonicalization (it would follow links). */
/** A layer's source as the mount process names it: the vetted directory it inherits as its descriptor 3. */
const INHERITED_SOURCE = descriptorPath(3);

function mountWith(fd: number | null, args: string[]): Promise<{ ok: boolean; said: string }> {
  return new Promise((resolve) => {
    const child = spawn('mount', ['-c', ...args], { stdio: ['ignore', 'ignore', 'pipe', ...(fd === null ? [] : [fd])] });
    let said = '';
    child.stderr!.on('data', (b: Buffer) => {
      if (said.length < 4096) said += b.toString();
    });
    child.on('error', (e) => resolve({ ok: false, said: e.message }));
    child.on('close', (code) => resolve({ ok: code === 0, said: said.trim().split('\n')[0] ?? '' }));
  });
}

/**
 * Makes each shared dependency available to one cell. A root runner mounts every one itself,
 * from a descriptor opened without following links: a kernel overlay over the read-only
 * source with its upper layer in a private tmpfs owned by the cell user (tools that write
 * caches into node_modules work; the checkout never changes; nothing on the host is chowned),
 * or a read-only bind. The layer goes with the cell. A runner that is not root cannot mount:
 * the sandbox binds the vetted path read-only.
 */
export async function mountDependencyLayers(
  plan: CellMountPlan,
  layersDir: string,
  cellId: string,
  user: { uid: number; gid: number },
): Promise<MountedDependencies> {
  const mounts: DependencyMount[] = [];
  const warnings: string[] = [];
  const made: string[] = [];
  const release = async () => {
    for (const dir of made.reverse()) {
      try {
        await removeLayer(dir);
      } catch {
        // A layer that will not go is left to gc (it lives in the state directory).
      }
    }
  };
  const root = (process.getuid?.() ?? 0) === 0;
  try {
    for (const [i, d] of plan.deps.entries()) {
      if (!root) {
        if (d.layer === 'overlay')
          warnings.push(`${d.source}: read-only without a writable layer (mounting an overlay needs a root runner)`);
        mounts.push({ source: d.source, target: d.target, writable: false, how: 'read-only' });
        continue;
      }
      const fd = openDirNoFollow(d.source);
      try {
        const caches = CACHE_DIRS.filter((c) => {
          try {
            return lstatAt(fd, c).isDirectory();
          } catch {
            return false;
          }
        }).map((c) => join(d.target, c));
        mkdirSync(layersDir, { recursive: true, mode: 0o700 });
        // The runner's pid in the name: gc removes the layers of a runner that is gone.
        const dir = mkdtempSync(join(layersDir, `${process.pid}-${cellId}-${i}-`));
        made.push(dir);
        const tmpfs = await mountWith(null, ['-t', 'tmpfs', '-o', LAYER_TMPFS, 'forge-layer', dir]);
        if (!tmpfs.ok) throw new Error(`mount tmpfs: ${tmpfs.said}`);
        for (const sub of ['upper', 'work', 'merged']) mkdirSync(join(dir, sub), { mode: 0o755 });
        const merged = join(dir, 'merged');
        if (d.layer === 'overlay') {
          // The overlay's top takes the upper directory's owner: the cell user may add to it.
          lchownSync(join(dir, 'upper'), user.uid, user.gid);
          // Installed tool caches are not the cell's to write: it gets empty ones of its own,
          // made in the upper layer (our tmpfs) and opaque over the installed ones.
          for (const c of caches) {
            const upperCache = join(dir, 'upper', c.slice(d.target.length + 1));
            mkdirSync(upperCache, { mode: 0o755 });
            lchownSync(upperCache, user.uid, user.gid);
            await markOpaque(upperCache);
          }
          const overlay = await mountWith(fd, [
            '-t',
            'overlay',
            'forge-deps',
            '-o',
            `lowerdir=${INHERITED_SOURCE},upperdir=${join(dir, 'upper')},workdir=${join(dir, 'work')}`,
            merged,
          ]);
          if (overlay.ok) {
            mounts.push({ source: merged, target: d.target, writable: true, how: 'read-only + overlay' });
            continue;
          }
          warnings.push(`${d.source}: read-only without a writable layer (overlay mount failed: ${overlay.said})`);
        }
        const bind = await mountWith(fd, ['--bind', INHERITED_SOURCE, merged]);
        if (!bind.ok) throw new Error(`mount --bind ${d.source}: ${bind.said}`);
        const ro = await mountWith(null, ['-o', 'remount,bind,ro,nosuid,nodev', merged]);
        if (!ro.ok) throw new Error(`remount ${d.source} read-only: ${ro.said}`);
        mounts.push({ source: merged, target: d.target, writable: false, how: 'read-only' });
      } finally {
        closeSync(fd);
      }
    }
  } catch (e) {
    await release();
    throw e;
  }
  return { mounts, warnings, release };
}
