import { createHash, type Hash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, readdirSync, readSync, type Stats } from 'node:fs';
import { posix } from 'node:path';
import { InputError } from '../../protocol/inputError.js';
import { isUtf8 } from 'node:buffer';
import { displayText } from '../../hostguard/displayText.js';
import { descriptorPath, lstatAt, O_PATH, openAt, readlinkAt, reopen } from '../../hostguard/beneath.js';
import { withPinnedDirectory } from '../../hostguard/pinnedDirectory.js';
import { type TarEntry, tarParts } from './tarArchive.js';

/**
 * A checkout's installed dependencies (node_modules, .venv) for swarm cells: nodes do not
 * share the runner's disk, so they travel as one image layer over the base, content-addressed
 * by what a walk of them reads, where other providers mount them. Regular files, directories
 * and symbolic links only; setuid and setgid bits never travel. As with the other providers'
 * read-only source under a writable layer: the content is root's (the cell reads it), the
 * target directory the cell user's (a tool may add its cache there); what a cell writes goes
 * with its task.
 *
 * The registry has no authentication, so a layer is readable by every local user: only what
 * any user could read on the runner anyway is put in it (see {@link walkDependencies}).
 */
export interface DependencySource {
  /** The path the cell spec names (reached without following a link). */
  source: string;
  /** Where it appears in the cell. */
  target: string;
}

/** Part of every dependency layer's tag: a layer made another way is another layer. */
export const DEPENDENCY_LAYER_FORMAT = 'deps-layer-5';

/** Most bytes of file content one swarm cell's dependency layer carries. */
export const SWARM_DEPS_MAX_BYTES = 768 * 1024 * 1024;
/** Most entries (files, directories, links) it carries. */
export const SWARM_DEPS_MAX_ENTRIES = 400_000;

/** What a walk left out of one dependency, as paths relative to its top. */
export interface LeftOut {
  target: string;
  /** Files and directories others may not read (or, for a directory, enter): their subtrees too. */
  unreadable: string[];
  /** Mount points of another filesystem than the dependency's own. */
  otherDevice: string[];
}

export interface DependencyWalk {
  /** The layer's identity: every name, kind, mode, time and the content of every file and link sent. */
  fingerprint: string;
  leftOut: LeftOut[];
}

type Entry = { rel: string; st: Stats } & ({ kind: 'dir' } | { kind: 'link'; linkname: string } | { kind: 'file'; fd: number });

/** Others may read it, and enter it when it is a directory: what any local user could read on the runner. */
function readableByAnyone(st: Stats): boolean {
  return (st.mode & 0o004) !== 0 && (!st.isDirectory() || (st.mode & 0o001) !== 0);
}

/**
 * Pure-ish check before the walk: the first component of `source` that is a symbolic link, for
 * a message that names it. The walk itself opens every component without following links, so a
 * link planted after this check is refused there too.
 */
function linkOnTheWay(source: string): string | null {
  let at = '';
  for (const part of source.split('/').filter(Boolean)) {
    at += `/${part}`;
    let st: Stats | undefined;
    try {
      st = lstatSync(at);
    } catch {
      return null;
    }
    if (st.isSymbolicLink()) return at;
  }
  return null;
}

/**
 * Walks each dependency without following any link, each name opened through its parent's
 * descriptor (a directory swapped for a link meanwhile leads nowhere), in sorted order, and
 * decides on what was opened (fstat of the descriptor, not an earlier look at the name):
 * a file or directory others may not read (or a directory they may not enter) is left out
 * with everything below it, as is anything on another filesystem than the dependency's top;
 * FIFOs, sockets and devices are skipped. A source reached through a link is refused.
 * Every file's content is read (and hashed) once; `onEntry` gets it while the descriptor is open.
 */
function walkDependencies(deps: readonly DependencySource[], onEntry: (dep: DependencySource, e: Entry, h: Hash) => void): DependencyWalk {
  const h = createHash('sha256').update(`${DEPENDENCY_LAYER_FORMAT}\0`);
  const leftOut: LeftOut[] = [];
  let entries = 0;
  let bytes = 0;
  for (const d of deps) {
    const link = linkOnTheWay(d.source);
    if (link)
      throw new InputError(
        `shared dependency ${d.source} passes through the symbolic link ${link}; swarm cells send a dependency only when its path has no link: share the real directory or remove the link`,
      );
    const out: LeftOut = { target: d.target, unreadable: [], otherDevice: [] };
    leftOut.push(out);
    h.update(`dep\0${d.target}\0`);
    withPinnedDirectory(
      d.source,
      undefined,
      (top) => {
        const topSt = fstatSync(top);
        if (!readableByAnyone(topSt)) {
          out.unreadable.push('.');
          return;
        }
        const inDir = (fd: number, rel: string) => {
          // Names as bytes: one that is not UTF-8 cannot travel as a tar name here, and a lossy decode would name another file.
          for (const raw of readdirSync(descriptorPath(fd), { encoding: 'buffer' }).sort(Buffer.compare)) {
            if (!isUtf8(raw))
              throw new InputError(
                `shared dependency ${d.source} has a file name that is not UTF-8 (${displayText(raw).slice(0, 200)}${rel ? ` in ${rel}` : ''}), which swarm cells cannot send: bake it into the image (forge-runner bake) or pass --no-shared-deps`,
              );
            const name = raw.toString('utf8');
            if (++entries > SWARM_DEPS_MAX_ENTRIES)
              throw new InputError(
                `shared dependency ${d.source} has more than ${SWARM_DEPS_MAX_ENTRIES} entries, too many to send to swarm nodes; bake them into the image (forge-runner bake) or pass --no-shared-deps`,
              );
            const r = rel ? `${rel}/${name}` : name;
            let st = lstatAt(fd, name);
            if (st.isSymbolicLink()) {
              const linkname = readlinkAt(fd, name);
              h.update(`link\0${r}\0${linkname}\n`);
              onEntry(d, { kind: 'link', rel: r, st, linkname }, h);
              continue;
            }
            if (!st.isDirectory() && !st.isFile()) continue;
            // A name only (O_PATH): nothing is opened for reading before what it is has been judged.
            const sub = openAt(fd, name, O_PATH);
            try {
              st = fstatSync(sub);
              if (!st.isDirectory() && !st.isFile()) continue;
              if (st.dev !== topSt.dev) {
                out.otherDevice.push(r);
                continue;
              }
              if (!readableByAnyone(st)) {
                out.unreadable.push(r);
                continue;
              }
              const meta = `${r}\0${st.mode & 0o1777}\0${Math.floor(st.mtimeMs / 1000)}`;
              if (st.isDirectory()) {
                h.update(`dir\0${meta}\n`);
                onEntry(d, { kind: 'dir', rel: r, st }, h);
                inDir(sub, r);
              } else if (st.isFile()) {
                bytes += st.size;
                if (bytes > SWARM_DEPS_MAX_BYTES)
                  throw new InputError(
                    `shared dependency ${d.source} is over ${SWARM_DEPS_MAX_BYTES / 1024 / 1024} MiB, too large to send to swarm nodes; bake it into the image (forge-runner bake) or pass --no-shared-deps`,
                  );
                h.update(`file\0${meta}\0${st.size}\0`);
                // The same inode, now for reading: the descriptor, not the name, is reopened.
                const content = reopen(sub, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
                try {
                  onEntry(d, { kind: 'file', rel: r, st, fd: content }, h);
                } finally {
                  closeSync(content);
                }
                h.update('\n');
              }
            } finally {
              closeSync(sub);
            }
          }
        };
        inDir(top, '');
      },
      'shared dependency',
    );
  }
  return { fingerprint: h.digest('hex'), leftOut };
}

/** Reads `size` bytes of an open file from its start, feeding each piece to `take`; stops early at its end. */
function readAll(fd: number, size: number, take: (piece: Buffer) => void, into?: Buffer): number {
  const chunk = into ?? Buffer.alloc(Math.min(size, 1024 * 1024));
  let got = 0;
  while (got < size) {
    const n = into ? readSync(fd, into, got, size - got, got) : readSync(fd, chunk, 0, Math.min(chunk.length, size - got), got);
    if (n === 0) break;
    take(into ? into.subarray(got, got + n) : chunk.subarray(0, n));
    got += n;
  }
  return got;
}

/** The dependencies' identity (content included) and what a layer of them leaves out; nothing is kept in memory. */
export function dependencyFingerprint(deps: readonly DependencySource[]): DependencyWalk {
  return walkDependencies(deps, (_d, e, h) => {
    if (e.kind === 'file') readAll(e.fd, e.st.size, (piece) => h.update(piece));
  });
}

/**
 * The layer as archive pieces (contents not copied again): each dependency at its target, the
 * target directory owned by `uid`, everything else root's; and the fingerprint of exactly
 * what it holds (equal to {@link dependencyFingerprint}'s while nothing changed). Throws
 * InputError past the size budget or when a source passes through a link.
 */
export function dependencyLayerTar(deps: readonly DependencySource[], uid: number): { parts: Buffer[] } & DependencyWalk {
  const root = { uid: 0, gid: 0 };
  const entries: TarEntry[] = [];
  const mtime = Math.floor(Date.now() / 1000);
  let current: DependencySource | null = null;
  const walked = walkDependencies(deps, (d, e, h) => {
    const top = d.target.replace(/^\/+/, '');
    if (current !== d) {
      current = d;
      // No entry for the directories above: those in the base (the worktree, /tmp) keep their
      // owner and mode; the engine makes any missing one.
      entries.push({ name: top, type: 'dir', mode: 0o755, uid, gid: uid, mtime });
    }
    const name = posix.join(top, e.rel);
    const mode = e.st.mode & 0o1777;
    const time = Math.floor(e.st.mtimeMs / 1000);
    if (e.kind === 'dir') entries.push({ name, type: 'dir', mode, ...root, mtime: time });
    else if (e.kind === 'link') entries.push({ name, type: 'symlink', mode: 0o777, ...root, mtime: time, linkname: e.linkname });
    else {
      const data = Buffer.alloc(e.st.size);
      const got = readAll(e.fd, e.st.size, (piece) => h.update(piece), data);
      entries.push({ name, type: 'file', mode, ...root, mtime: time, data: data.subarray(0, got) });
    }
  });
  // A dependency with nothing readable still gets its (empty) top directory.
  for (const d of deps)
    if (!entries.some((e) => e.name === d.target.replace(/^\/+/, '')))
      entries.push({ name: d.target.replace(/^\/+/, ''), type: 'dir', mode: 0o755, uid, gid: uid, mtime });
  return { parts: tarParts(entries), ...walked };
}

/** Pure: the warnings of a walk, each dependency named by `label` (its place in the worktree). */
export function leftOutWarnings(leftOut: readonly LeftOut[], label: (target: string) => string): string[] {
  const warnings: string[] = [];
  const list = (paths: string[], under: string) => {
    const shown = paths.slice(0, 10).map((p) => (p === '.' ? under : p));
    return `${shown.join(', ')}${paths.length > shown.length ? ` and ${paths.length - shown.length} more` : ''}`;
  };
  for (const l of leftOut) {
    const name = label(l.target);
    if (l.unreadable.includes('.'))
      warnings.push(`${name} is not readable by the cell user and was not sent: the registry would make it readable to every local user`);
    else if (l.unreadable.length > 0)
      warnings.push(
        `${l.unreadable.length} ${l.unreadable.length === 1 ? 'entry' : 'entries'} of ${name} ${l.unreadable.length === 1 ? 'is' : 'are'} not readable by the cell user and ${l.unreadable.length === 1 ? 'was' : 'were'} not sent: ${list(l.unreadable, name)}`,
      );
    for (const p of l.otherDevice) warnings.push(`${posix.join(name, p)} is another filesystem than ${name} and was not sent`);
  }
  return warnings;
}
