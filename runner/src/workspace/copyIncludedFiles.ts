import { closeSync, constants, readSync, writeSync } from 'node:fs';
import { mkdirAt, openAt, openDirectoryAt, symlinkAt } from '../hostguard/beneath.js';
import { openEntryBeneath } from '../hostguard/openBeneath.js';
import { openDirectoryNoFollow } from '../hostguard/pinnedDirectory.js';

/** In a worktree's own git directory: the files the runner copied in (NUL-separated), kept out of every captured diff. */
export const INCLUDED_FILES_NAME = 'forge-included';

/** Bounds on what is copied into one worktree: a list that asks for more is cut, and said. */
export const INCLUDE_LIMITS = { files: 1000, fileBytes: 16 * 1024 * 1024, totalBytes: 64 * 1024 * 1024 } as const;

export interface CopiedIncludes {
  copied: string[];
  /** One line per file not copied, and why. */
  skipped: string[];
}

/**
 * Copies untracked files of the checkout `from` (paths relative to it, decided before the run)
 * into the new worktree `to`, both walked one component at a time without following links:
 * a file reached through a link, or a destination directory the checked-out tree made a link,
 * is skipped and named. A link among the files is copied as a link (its target is not read).
 */
export function copyIncludedFiles(from: string, to: string, files: readonly string[]): CopiedIncludes {
  const copied: string[] = [];
  const skipped: string[] = [];
  let total = 0;
  for (const rel of files.slice(0, INCLUDE_LIMITS.files)) {
    const src = openEntryBeneath(from, rel, INCLUDE_LIMITS.fileBytes);
    if (src.kind !== 'ok') {
      if (src.kind === 'refused') skipped.push(`${rel}: ${src.why}`);
      continue;
    }
    if (src.type === 'file' && total + src.size > INCLUDE_LIMITS.totalBytes) {
      closeSync(src.fd);
      skipped.push(`${rel}: over ${INCLUDE_LIMITS.totalBytes} bytes copied in all`);
      continue;
    }
    try {
      const why = writeBeneath(to, rel, src.type === 'file' ? { fd: src.fd, mode: src.mode, size: src.size } : { target: src.target });
      if (why) skipped.push(`${rel}: ${why}`);
      else {
        copied.push(rel);
        if (src.type === 'file') total += src.size;
      }
    } finally {
      if (src.type === 'file') closeSync(src.fd);
    }
  }
  if (files.length > INCLUDE_LIMITS.files)
    skipped.push(`${files.length - INCLUDE_LIMITS.files} more file(s): at most ${INCLUDE_LIMITS.files} are copied`);
  return { copied, skipped };
}

/** Creates `rel` beneath `top` (new directories 0755, the file new: O_EXCL), never through a link; the reason when it cannot. */
function writeBeneath(top: string, rel: string, what: { fd: number; mode: number; size: number } | { target: string }): string | null {
  const fds: number[] = [];
  const track = (fd: number) => (fds.push(fd), fd);
  try {
    let dir = openDirectoryNoFollow(top, track, 'the worktree').fd;
    const parts = rel.split('/').filter(Boolean);
    for (const part of parts.slice(0, -1)) {
      try {
        mkdirAt(dir, part, 0o755);
      } catch (e) {
        return `cannot make ${part} (${(e as NodeJS.ErrnoException).code})`;
      }
      try {
        dir = track(openDirectoryAt(dir, part));
      } catch {
        return `${part} in the worktree is not a directory (a link the tree holds?)`;
      }
    }
    const name = parts.at(-1)!;
    if ('target' in what) {
      try {
        symlinkAt(what.target, dir, name);
      } catch (e) {
        return `cannot make the link (${(e as NodeJS.ErrnoException).code})`;
      }
      return null;
    }
    let out: number;
    try {
      out = track(openAt(dir, name, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, what.mode & 0o755));
    } catch (e) {
      return `cannot create it in the worktree (${(e as NodeJS.ErrnoException).code})`;
    }
    // At most the size it had when it was opened: a file growing meanwhile is not followed.
    const buf = Buffer.alloc(Math.min(1024 * 1024, Math.max(1, what.size)));
    for (let left = what.size; left > 0;) {
      const n = readSync(what.fd, buf, 0, Math.min(buf.length, left), null);
      if (n <= 0) break;
      writeSync(out, buf, 0, n);
      left -= n;
    }
    return null;
  } finally {
    for (const fd of fds.reverse()) closeSync(fd);
  }
}
