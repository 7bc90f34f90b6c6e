import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, type Stats } from 'node:fs';
import { posix } from 'node:path';
import { InputError } from '../../protocol/inputError.js';
import { O_PATH, withPinnedDirectory } from '../../workspace/pinnedDirectory.js';
import { type TarEntry, tarParts } from './tarArchive.js';

/**
 * A checkout's installed dependencies (node_modules, .venv) for swarm cells: nodes do not
 * share the runner's disk, so they travel as one image layer over the base, content-addressed
 * by what a walk of them sees, where other providers mount them. Regular files, directories
 * and symbolic links only; setuid and setgid bits never travel. As with the other providers'
 * read-only source under a writable layer: the content is root's (the cell reads it), the
 * target directory the cell user's (a tool may add its cache there); what a cell writes goes
 * with its task.
 */
export interface DependencySource {
  /** Real path on the runner (vetted as a shared dependency). */
  source: string;
  /** Where it appears in the cell. */
  target: string;
}

/** Part of every dependency layer's tag: a layer made another way is another layer. */
export const DEPENDENCY_LAYER_FORMAT = 'deps-layer-4';

/** Most bytes of file content one swarm cell's dependency layer carries. */
export const SWARM_DEPS_MAX_BYTES = 768 * 1024 * 1024;
/** Most entries (files, directories, links) it carries. */
export const SWARM_DEPS_MAX_ENTRIES = 400_000;

interface Visit {
  rel: string;
  st: Stats;
  /** A name of the entry resolved through its parent's descriptor (no link on the way). */
  at: string;
}

/**
 * Walks `root` without following any link, each name resolved through its parent's open
 * descriptor: a directory swapped for a link meanwhile leads nowhere. Sorted, so the same
 * tree walks the same way. Other kinds (FIFOs, sockets, devices) are skipped.
 */
function walk(root: string, visit: (v: Visit) => void): void {
  withPinnedDirectory(
    root,
    undefined,
    (top) => {
      let entries = 0;
      const inDir = (fd: number, rel: string) => {
        for (const name of readdirSync(`/proc/self/fd/${fd}`).sort()) {
          if (++entries > SWARM_DEPS_MAX_ENTRIES)
            throw new InputError(
              `shared dependency ${root} has more than ${SWARM_DEPS_MAX_ENTRIES} entries, too many to send to swarm nodes; bake them into the image (forge-runner bake) or pass --no-shared-deps`,
            );
          const at = `/proc/self/fd/${fd}/${name}`;
          const st = lstatSync(at);
          const r = rel ? `${rel}/${name}` : name;
          if (st.isDirectory()) {
            visit({ rel: r, st, at });
            const sub = openSync(at, O_PATH | constants.O_NOFOLLOW | constants.O_DIRECTORY);
            try {
              inDir(sub, r);
            } finally {
              closeSync(sub);
            }
          } else if (st.isFile() || st.isSymbolicLink()) visit({ rel: r, st, at });
        }
      };
      inDir(top, '');
    },
    'shared dependency',
  );
}

/** What the walk sees (names, kinds, sizes, times, modes, link targets): the layer's identity, read without file contents. */
export function dependencyFingerprint(deps: DependencySource[]): string {
  const h = createHash('sha256').update(`${DEPENDENCY_LAYER_FORMAT}\0`);
  for (const d of deps) {
    h.update(`dep\0${d.target}\0`);
    walk(d.source, ({ rel, st, at }) => {
      h.update(`${rel}\0${st.mode}\0${st.size}\0${st.mtimeMs}\0${st.isSymbolicLink() ? readlinkSync(at) : ''}\n`);
    });
  }
  return h.digest('hex');
}

/** The layer as archive pieces (contents not copied): each dependency at its target, the target directory owned by `uid`. Throws InputError past the size budget. */
export function dependencyLayerTar(deps: DependencySource[], uid: number): Buffer[] {
  const root = { uid: 0, gid: 0 };
  const entries: TarEntry[] = [];
  const mtime = Math.floor(Date.now() / 1000);
  let bytes = 0;
  for (const d of deps) {
    const top = d.target.replace(/^\/+/, '');
    // No entry for the directories above: those in the base (the worktree, /tmp) keep their
    // owner and mode; the engine makes any missing one.
    entries.push({ name: top, type: 'dir', mode: 0o755, uid, gid: uid, mtime });
    walk(d.source, ({ rel, st, at }) => {
      const name = posix.join(top, rel);
      const mode = st.mode & 0o1777;
      const time = Math.floor(st.mtimeMs / 1000);
      if (st.isDirectory()) entries.push({ name, type: 'dir', mode, ...root, mtime: time });
      else if (st.isSymbolicLink()) entries.push({ name, type: 'symlink', mode: 0o777, ...root, mtime: time, linkname: readlinkSync(at) });
      else {
        bytes += st.size;
        if (bytes > SWARM_DEPS_MAX_BYTES)
          throw new InputError(
            `shared dependency ${d.source} is over ${SWARM_DEPS_MAX_BYTES / 1024 / 1024} MiB, too large to send to swarm nodes; bake it into the image (forge-runner bake) or pass --no-shared-deps`,
          );
        entries.push({ name, type: 'file', mode, ...root, mtime: time, data: readRegular(at, st.size) });
      }
    });
  }
  return tarParts(entries);
}

/** A regular file's content, opened without following a link (one swapped in meanwhile is not read). */
function readRegular(at: string, size: number): Buffer {
  const fd = openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) return Buffer.alloc(0);
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}
