import { chmodSync, closeSync, constants, type Dirent, fchmodSync, fstatSync, lstatSync, openSync, readdirSync, unlinkSync } from 'node:fs';
import type { CellResult } from '../protocol/cellResult.js';
import { displayText } from './displayText.js';

export type NeutralizedEntry = CellResult['neutralized'][number];

export interface HazardScan {
  neutralized: NeutralizedEntry[];
  /** Why the walk stopped before the end, or null. */
  incomplete: string | null;
  /** Entries whose path is longer than host tools (git) can name: they are in no diff. */
  tooLong: number;
}

export const HAZARD_SCAN_LIMITS = { maxEntries: 1_000_000, deadlineMs: 30_000, reported: 500 } as const;

/** PATH_MAX: a path at least this long cannot be opened by name, so git never sees it. */
export const HOST_PATH_MAX = 4096;

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
/** An entry below an open directory: each step goes through a descriptor, never a long path. */
const at = (fd: number, name: Buffer | string): Buffer =>
  Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), typeof name === 'string' ? Buffer.from(name) : name]);

/**
 * After a cell, before anything else on the host reads the tree: clears setuid/setgid bits
 * and removes device nodes, FIFOs and sockets the cell left. None of them can be represented
 * in git, and on the host each is a hazard (a setuid binary another user runs, a FIFO that
 * blocks a reader, a device node). The walk goes from directory descriptor to directory
 * descriptor (O_NOFOLLOW), so links are never followed and a tree deeper than PATH_MAX is
 * walked whole; paths that long are counted, since git cannot see them.
 */
export function neutralizeHazards(
  top: string,
  opts: {
    skip?: string[];
    limits?: typeof HAZARD_SCAN_LIMITS;
    /** Length of the tree's real path when `top` is a /proc/self/fd name. */ topBytes?: number;
  } = {},
): HazardScan {
  const limits = opts.limits ?? HAZARD_SCAN_LIMITS;
  const deadline = Date.now() + limits.deadlineMs;
  const skipped = new Set(opts.skip ?? []);
  const neutralized: NeutralizedEntry[] = [];
  let seen = 0;
  let tooLong = 0;
  let incomplete: string | null = null;
  const record = (entry: NeutralizedEntry) => {
    if (neutralized.length < limits.reported) neutralized.push(entry);
  };
  // Depth first, one open descriptor per level (never one per pending directory).
  // Names as bytes: a name that is not UTF-8 would otherwise be looked up under another name.
  const frames: { fd: number; rel: string; bytes: number; entries: Dirent<Buffer>[]; i: number }[] = [];
  const enter = (fd: number, rel: string, bytes: number): void => {
    try {
      frames.push({ fd, rel, bytes, entries: readdirSync(at(fd, ''), { withFileTypes: true, encoding: 'buffer' }), i: 0 });
    } catch {
      closeSync(fd);
      incomplete ??= `${rel || '.'} cannot be read`;
    }
  };
  try {
    enter(openSync(top, O_RDONLY | O_DIRECTORY), '', opts.topBytes ?? Buffer.byteLength(top));
  } catch {
    return { neutralized, incomplete: `${top} cannot be opened`, tooLong };
  }
  try {
    while (frames.length > 0) {
      const dir = frames[frames.length - 1]!;
      const e = dir.entries[dir.i++];
      if (!e) {
        closeSync(dir.fd);
        frames.pop();
        continue;
      }
      if (++seen > limits.maxEntries || (seen % 1024 === 0 && Date.now() > deadline)) {
        incomplete =
          seen > limits.maxEntries ? `more than ${limits.maxEntries} entries` : `past its ${limits.deadlineMs / 1000} s deadline`;
        break;
      }
      const shown = displayText(e.name);
      if (dir.rel === '' && skipped.has(shown)) continue;
      const rel = dir.rel === '' ? shown : `${dir.rel}/${shown}`;
      const bytes = dir.bytes + 1 + e.name.length;
      if (bytes >= HOST_PATH_MAX) tooLong++;
      if (e.isDirectory()) {
        let fd: number;
        try {
          fd = openSync(at(dir.fd, e.name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        } catch {
          incomplete ??= `${rel.slice(0, 200)} cannot be opened`;
          continue;
        }
        enter(fd, rel, bytes);
      } else if (e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice()) {
        const found = e.isFIFO() ? 'fifo' : e.isSocket() ? 'socket' : 'device';
        try {
          unlinkSync(at(dir.fd, e.name));
          record({ path: rel, found, action: 'removed' });
        } catch {
          /* gone already */
        }
      } else if (e.isFile()) clearSetId(dir.fd, e.name, rel, record);
    }
  } finally {
    for (const f of frames) closeSync(f.fd);
  }
  return { neutralized, incomplete, tooLong };
}

function clearSetId(dirFd: number, name: Buffer, rel: string, record: (e: NeutralizedEntry) => void): void {
  let fd: number;
  try {
    fd = openSync(at(dirFd, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch {
    // Unreadable to us (mode 0000 of our own user): nothing runs in the tree any more, so
    // checking and changing the mode through the directory cannot race with the cell.
    try {
      const st = lstatSync(at(dirFd, name));
      if (st.isFile() && (st.mode & 0o6000) !== 0) {
        chmodSync(at(dirFd, name), st.mode & 0o1777);
        record({ path: rel, found: 'setid', action: 'cleared' });
      }
    } catch {
      /* cannot be opened at all: cannot be run by anyone but root either */
    }
    return;
  }
  try {
    const st = fstatSync(fd);
    if (st.isFile() && (st.mode & 0o6000) !== 0) {
      fchmodSync(fd, st.mode & 0o1777);
      record({ path: rel, found: 'setid', action: 'cleared' });
    }
  } finally {
    closeSync(fd);
  }
}
