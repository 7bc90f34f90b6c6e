import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, openSync, opendirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { CellResult } from '../protocol/cellResult.js';

export type NeutralizedEntry = CellResult['neutralized'][number];

export interface HazardScan {
  neutralized: NeutralizedEntry[];
  /** Why the walk stopped before the end, or null. */
  incomplete: string | null;
}

export const HAZARD_SCAN_LIMITS = { maxEntries: 1_000_000, deadlineMs: 30_000, reported: 500 } as const;

/**
 * After a cell, before anything else on the host reads the tree: clears setuid/setgid bits
 * and removes device nodes, FIFOs and sockets the cell left. None of them can be represented
 * in git, and on the host each is a hazard (a setuid binary another user runs, a FIFO that
 * blocks a reader, a device node). The walk never follows symbolic links, and opens what it
 * changes with O_NOFOLLOW so a swapped entry is not touched through a link.
 */
export function neutralizeHazards(top: string, opts: { skip?: string[]; limits?: typeof HAZARD_SCAN_LIMITS } = {}): HazardScan {
  const limits = opts.limits ?? HAZARD_SCAN_LIMITS;
  const deadline = Date.now() + limits.deadlineMs;
  const skipped = new Set((opts.skip ?? []).map((s) => join(top, s)));
  const neutralized: NeutralizedEntry[] = [];
  let seen = 0;
  let incomplete: string | null = null;
  const record = (entry: NeutralizedEntry) => {
    if (neutralized.length < limits.reported) neutralized.push(entry);
  };
  const stack: string[] = [top];
  walk: while (stack.length > 0) {
    const dir = stack.pop()!;
    let handle;
    try {
      handle = opendirSync(dir);
    } catch {
      continue;
    }
    try {
      for (let e = handle.readSync(); e !== null; e = handle.readSync()) {
        if (++seen > limits.maxEntries || (seen % 1024 === 0 && Date.now() > deadline)) {
          incomplete = seen > limits.maxEntries ? `more than ${limits.maxEntries} entries` : `past its ${limits.deadlineMs / 1000} s deadline`;
          break walk;
        }
        const path = join(dir, e.name);
        if (skipped.has(path)) continue;
        const rel = path.slice(top.length + 1);
        if (e.isDirectory()) stack.push(path);
        else if (e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice()) {
          const found = e.isFIFO() ? 'fifo' : e.isSocket() ? 'socket' : 'device';
          try {
            unlinkSync(path);
            record({ path: rel, found, action: 'removed' });
          } catch { /* gone already */ }
        } else if (e.isFile()) clearSetId(path, rel, record);
      }
    } finally {
      handle.closeSync();
    }
  }
  return { neutralized, incomplete };
}

function clearSetId(path: string, rel: string, record: (e: NeutralizedEntry) => void): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    // Unreadable to us (mode 0000 of our own user): nothing runs in the tree any more, so
    // checking by path and changing by path cannot race with the cell.
    try {
      const st = lstatSync(path);
      if (st.isFile() && (st.mode & 0o6000) !== 0) {
        chmodSync(path, st.mode & 0o1777);
        record({ path: rel, found: 'setid', action: 'cleared' });
      }
    } catch { /* gone */ }
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
