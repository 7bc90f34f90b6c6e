import { readdir, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface RetentionPolicy {
  /** Most cell logs kept; the oldest go first. */
  maxFiles: number;
  /** Logs older than this are removed. */
  maxAgeMs: number;
}

export const DEFAULT_RETENTION: RetentionPolicy = { maxFiles: 2000, maxAgeMs: 14 * 24 * 3600 * 1000 };

/** Pure: which logs to delete, given their names and modification times. */
export function logsToPrune(logs: { name: string; mtimeMs: number }[], now: number, policy: RetentionPolicy): string[] {
  const sorted = [...logs].sort((a, b) => b.mtimeMs - a.mtimeMs);
  return sorted.filter((l, i) => i >= policy.maxFiles || now - l.mtimeMs > policy.maxAgeMs).map((l) => l.name);
}

/** How often a directory's logs are looked at: statting thousands of logs costs every cell tens of ms. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000;
const PRUNED_MARKER = '.pruned';

/**
 * Removes cell logs beyond the retention policy, at most once per PRUNE_INTERVAL_MS per
 * directory (a marker file's mtime says when). Best effort: a log in use stays.
 */
export async function pruneCellLogs(dir: string, policy: RetentionPolicy = DEFAULT_RETENTION, now = Date.now()): Promise<number> {
  const marker = join(dir, PRUNED_MARKER);
  const last = (await stat(marker).catch(() => null))?.mtimeMs;
  if (last !== undefined && now - last < PRUNE_INTERVAL_MS && last <= now) return 0;
  await writeFile(marker, '')
    .then(() => utimes(marker, now / 1000, now / 1000))
    .catch(() => undefined);
  const names = (await readdir(dir)).filter((n) => n.endsWith('.log'));
  if (names.length <= policy.maxFiles && names.length < 64) return 0;
  const logs = await Promise.all(
    names.map(async (name) => ({ name, mtimeMs: (await stat(join(dir, name)).catch(() => null))?.mtimeMs ?? 0 })),
  );
  const doomed = logsToPrune(logs, now, policy);
  await Promise.all(doomed.map((n) => unlink(join(dir, n)).catch(() => undefined)));
  return doomed.length;
}
