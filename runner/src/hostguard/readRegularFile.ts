import { constants, openSync } from 'node:fs';
import { join } from 'node:path';
import { readOpenedRegular, withFileForReading } from './beneath.js';

/**
 * A file of a tree a cell may have written, read the way the host may read it: the entry
 * itself, never through a symbolic link (O_NOFOLLOW), only a regular file (not a FIFO that
 * would block), and at most `maxBytes`. Null when it is absent or not such a file;
 * `{ tooLarge }` when it is larger than `maxBytes`.
 */
export function readRegularPath(path: string, maxBytes: number): Buffer | { tooLarge: number } | null {
  return withFileForReading(
    (flags) => openSync(path, flags | constants.O_NOFOLLOW),
    (fd) => readOpenedRegular(fd, maxBytes),
  );
}

/** readRegularPath of `dir/name`; a file over `maxBytes` is an error. */
export function readRegularFile(dir: string, name: string, maxBytes = 16 * 1024 * 1024): Buffer | null {
  const r = readRegularPath(join(dir, name), maxBytes);
  if (r && !Buffer.isBuffer(r)) throw new Error(`${join(dir, name)} is ${r.tooLarge} bytes; at most ${maxBytes} are read`);
  return r;
}
