import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, extname, join, sep } from 'node:path';
import { rememberCheckoutOwners } from '../hostguard/checkoutOwnership.js';
import { replaceFile } from './replaceFile.js';

/**
 * What a checkout held before Forge wrote into it, kept in the runner's state dir (never in
 * the repository): the bytes and mode of each file an apply touches, or that it did not
 * exist. Undo writes exactly those bytes back; `before` files also serve the merge editor as
 * "your checkout" side.
 */
export interface UndoFile {
  path: string;
  existed: boolean;
  mode: number | null;
  /** The saved copy (absent when the file did not exist). */
  before: string | null;
}

export interface UndoRecord {
  id: string;
  run_id: string;
  attempt: number;
  top: string;
  created_at: string;
  /** The apply set the run's review to applied (undo sets it back to pending). */
  marked_applied: boolean;
  files: UndoFile[];
}

/** An undo id: the apply's time in ms and a sequence number (the folder name under the run's apply-undo). */
export const UNDO_ID = /^[0-9]{8,20}-[0-9]{1,3}$/;

export function undoRoot(stateDir: string, runId: string): string {
  return join(stateDir, 'apply-undo', runId);
}

/**
 * `path` under `top` when no component of its directory is a symbolic link out of the tree
 * (git apply refuses to write through one too); throws otherwise.
 */
export function pathInCheckout(top: string, path: string): string {
  if (path.startsWith('/') || path.split('/').includes('..'))
    throw new Error(`${JSON.stringify(path)} is not a path inside the repository`);
  const full = join(top, path);
  let dir = dirname(full);
  while (!existsSync(dir)) dir = dirname(dir);
  const real = realpathSync(dir);
  if (real !== top && !real.startsWith(top + sep)) throw new Error(`${path} lies behind a symbolic link out of the repository`);
  return full;
}

let seq = 0;

/**
 * Saves what each of `paths` holds now; returns the record, NOT yet written: the caller writes
 * it (writeRecord) only once the apply succeeded, so a failed apply leaves no record for Undo
 * to pick. Throws (nothing kept) when a path is not a regular file or missing.
 */
export function saveCheckout(root: string, top: string, runId: string, attempt: number, paths: string[]): UndoRecord {
  const id = `${Date.now()}-${seq++ % 1000}`;
  const dir = join(root, id);
  mkdirSync(join(dir, 'files'), { recursive: true, mode: 0o700 });
  try {
    const files = [...new Set(paths)].map((path, i): UndoFile => {
      const full = pathInCheckout(top, path);
      let st;
      try {
        st = lstatSync(full);
      } catch {
        return { path, existed: false, mode: null, before: null };
      }
      if (!st.isFile())
        throw new Error(
          `${path} is not a regular file in your checkout (a ${st.isSymbolicLink() ? 'symbolic link' : 'directory'}); not applied`,
        );
      // Named by index (a name of 250 bytes plus a prefix would pass NAME_MAX); a short plain
      // extension stays so the merge editor picks the file's language from it.
      const before = join(dir, 'files', `${i}${safeExtension(path)}`);
      writeFileSync(before, readFileSync(full), { mode: 0o600 });
      return { path, existed: true, mode: st.mode & 0o7777, before };
    });
    return { id, run_id: runId, attempt, top, created_at: new Date().toISOString(), marked_applied: false, files };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

function safeExtension(path: string): string {
  const ext = extname(path);
  return /^\.[A-Za-z0-9_+-]{1,12}$/.test(ext) ? ext : '';
}

export function writeRecord(root: string, record: UndoRecord): void {
  writeFileSync(join(root, record.id, 'record.json'), JSON.stringify(record, null, 1), { mode: 0o600 });
}

/** The newest record of a run (or the one named), or null. */
export function readRecord(root: string, id?: string): UndoRecord | null {
  if (id !== undefined && !UNDO_ID.test(id)) throw new Error(`${JSON.stringify(id)} is not an undo id`);
  if (!existsSync(root)) return null;
  const ids =
    id !== undefined
      ? [id]
      : readdirSync(root)
          .filter((n) => UNDO_ID.test(n))
          .sort(byTime)
          .reverse();
  for (const n of ids) {
    const file = join(root, n, 'record.json');
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as UndoRecord;
  }
  return null;
}

/** Undo ids in the order their applies happened. */
export function byTime(a: string, b: string): number {
  const [ta, sa] = a.split('-').map(Number);
  const [tb, sb] = b.split('-').map(Number);
  return ta! - tb! || sa! - sb!;
}

export interface RestoreOutcome {
  restored: string[];
  /** Files that could not be put back, each with why (the rest were). */
  failed: { path: string; reason: string }[];
}

/**
 * Writes back what the record saved, best effort over every entry: a file the apply created
 * is removed whatever it is now (file or symbolic link; an empty directory), a saved file gets
 * its bytes and mode by a new file renamed into place (never written through a hard link or a
 * symbolic link). An entry that fails does not stop the others; each is reported.
 */
export function restoreCheckout(record: UndoRecord): RestoreOutcome {
  const out: RestoreOutcome = { restored: [], failed: [] };
  for (const f of record.files) {
    try {
      const full = pathInCheckout(record.top, f.path);
      const st = lstatSync(full, { throwIfNoEntry: false });
      if (!f.existed) {
        if (st?.isDirectory()) rmdirSync(full);
        else if (st) unlinkSync(full);
        out.restored.push(f.path);
        continue;
      }
      if (st?.isDirectory()) throw new Error('a directory is there now');
      const bytes = readFileSync(f.before!);
      // Already as saved (a write that failed before reaching it): nothing to do.
      if (st?.isFile() && (f.mode === null || (st.mode & 0o7777) === f.mode) && readFileSync(full).equals(bytes)) {
        out.restored.push(f.path);
        continue;
      }
      // A root runner recreating a deleted file gives it (and directories made for it) back to its owner.
      const owners = st ? () => undefined : rememberCheckoutOwners(record.top, [f.path]);
      if (!st) mkdirSync(dirname(full), { recursive: true });
      replaceFile(full, bytes, f.mode);
      owners();
      out.restored.push(f.path);
    } catch (e) {
      out.failed.push({ path: f.path, reason: (e as Error).message.split('\n')[0] ?? 'failed' });
    }
  }
  return out;
}

/** One line naming what could not be restored. */
export function describeUnrestored(failed: RestoreOutcome['failed']): string {
  return failed
    .slice(0, 5)
    .map((f) => `${JSON.stringify(f.path)} (${f.reason})`)
    .join(', ')
    .concat(failed.length > 5 ? ` and ${failed.length - 5} more` : '');
}
