import { randomBytes } from 'node:crypto';
import { chmodSync, lchownSync, lstatSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `bytes` as the file at `full` by a new file in the same directory renamed over it,
 * never into the old inode: a file hard-linked from outside the checkout (or a symbolic link
 * put there) is replaced, not written through. The new file keeps the old one's owner (when
 * root may give it) and takes `mode`, else the old file's mode, else 0644.
 */
export function replaceFile(full: string, bytes: Buffer, mode: number | null): void {
  const old = lstatSync(full, { throwIfNoEntry: false });
  const tmp = join(dirname(full), `.${basename(full).slice(0, 40)}.forge-${randomBytes(6).toString('hex')}`);
  writeFileSync(tmp, bytes, { flag: 'wx', mode: 0o600 });
  try {
    // chown first: it clears set-id bits that chmod then puts back.
    if (old && (process.getuid?.() ?? -1) === 0) lchownSync(tmp, old.uid, old.gid);
    chmodSync(tmp, mode ?? (old?.isFile() ? old.mode & 0o7777 : 0o644));
    renameSync(tmp, full);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
