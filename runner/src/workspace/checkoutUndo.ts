import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { rememberCheckoutOwners } from '../hostguard/checkoutOwnership.js';

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

const UNDO_ID = /^[0-9]{8,20}-[0-9]{1,3}$/;

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

/** Saves what each of `paths` holds now; returns the record (written, not yet marked applied). */
export function saveCheckout(root: string, top: string, runId: string, attempt: number, paths: string[]): UndoRecord {
  const id = `${Date.now()}-${seq++ % 1000}`;
  const dir = join(root, id);
  mkdirSync(join(dir, 'files'), { recursive: true, mode: 0o700 });
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
    // The name keeps the extension: the merge editor picks its language from it.
    const before = join(dir, 'files', `${i}-${basename(path)}`);
    writeFileSync(before, readFileSync(full), { mode: 0o600 });
    return { path, existed: true, mode: st.mode & 0o7777, before };
  });
  const record: UndoRecord = { id, run_id: runId, attempt, top, created_at: new Date().toISOString(), marked_applied: false, files };
  writeRecord(root, record);
  return record;
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

function byTime(a: string, b: string): number {
  const [ta, sa] = a.split('-').map(Number);
  const [tb, sb] = b.split('-').map(Number);
  return ta! - tb! || sa! - sb!;
}

/**
 * Writes back exactly what the record saved: saved files get their bytes and mode (in place
 * when the file is there, so its owner stays), files that did not exist are removed.
 */
export function restoreCheckout(record: UndoRecord): string[] {
  const restored: string[] = [];
  for (const f of record.files) {
    const full = pathInCheckout(record.top, f.path);
    const st = (() => {
      try {
        return lstatSync(full);
      } catch {
        return null;
      }
    })();
    if (st && !st.isFile()) throw new Error(`${f.path} is no longer a regular file; undo stopped before it (files before it are restored)`);
    if (!f.existed) {
      if (st) unlinkSync(full);
      restored.push(f.path);
      continue;
    }
    const bytes = readFileSync(f.before!);
    // A root runner recreating a deleted file gives it back to its owner.
    const owners = st ? () => undefined : rememberCheckoutOwners(record.top, [f.path]);
    if (!st) mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, bytes);
    if (f.mode !== null) chmodSync(full, f.mode);
    owners();
    restored.push(f.path);
  }
  return restored;
}
