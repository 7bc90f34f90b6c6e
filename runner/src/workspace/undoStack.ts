import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { byTime, UNDO_ID, type UndoRecord } from './checkoutUndo.js';

/** Every apply of a run still remembered (not undone), newest first. */
export function listRecords(root: string): UndoRecord[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((n) => UNDO_ID.test(n) && existsSync(join(root, n, 'record.json')))
    .sort(byTime)
    .reverse()
    .map((n) => JSON.parse(readFileSync(join(root, n, 'record.json'), 'utf8')) as UndoRecord);
}

/**
 * The applies of every run into checkout `top` still remembered, newest first (`runsRoot`:
 * the state dir's apply-undo, one folder per run): two runs applied into one file are undone
 * newest first too.
 */
export function listCheckoutRecords(runsRoot: string, top: string): UndoRecord[] {
  if (!existsSync(runsRoot)) return [];
  return readdirSync(runsRoot)
    .flatMap((run) => listRecords(join(runsRoot, run)))
    .filter((r) => r.top === top)
    .sort((a, b) => byTime(b.id, a.id));
}

/**
 * Pure: the newer applies (still remembered) that wrote a file `record` would restore. Undoing
 * an older apply under them puts back bytes from before them too (their change goes with it,
 * the run still saying applied), and undoing them afterwards writes the older apply's change
 * back: an apply is undone newest first.
 */
export function newerOverlapping(records: readonly UndoRecord[], record: UndoRecord): UndoRecord[] {
  const mine = new Set(record.files.map((f) => f.path));
  const at = records.findIndex((r) => r.id === record.id && r.run_id === record.run_id);
  const newer = at < 0 ? [] : records.slice(0, at);
  return newer.filter((r) => r.files.some((f) => mine.has(f.path)));
}

/**
 * Pure: what of the run the checkout holds as parts (applies not undone and not marking the run
 * applied), newest first: every such apply's files, not only the newest's; the newest's attempt.
 */
export function appliedPartOf(records: readonly UndoRecord[]): { attempt: number; files: string[] } | null {
  const parts = records.filter((r) => !r.marked_applied);
  if (parts.length === 0) return null;
  return { attempt: parts[0]!.attempt, files: [...new Set(parts.flatMap((r) => r.files.map((f) => f.path)))] };
}
