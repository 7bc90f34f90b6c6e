/**
 * Read-only virtual documents for the review: `forge-review:/<path>?run=<id>&side=base|attempt`.
 * The path keeps the file name and language; the query says which side to read.
 */
export const REVIEW_SCHEME = 'forge-review';
export const LOG_SCHEME = 'forge-log';

export interface ReviewRef {
  runId: string;
  side: 'base' | 'attempt';
  path: string;
  /** The attempt whose side this is; absent: the run's winner. */
  attempt?: number;
}

export function reviewUriParts(ref: ReviewRef): { scheme: string; path: string; query: string } {
  const query = new URLSearchParams({ run: ref.runId, side: ref.side });
  if (ref.attempt !== undefined) query.set('attempt', String(ref.attempt));
  return { scheme: REVIEW_SCHEME, path: `/${ref.path}`, query: query.toString() };
}

export function parseReviewUri(path: string, query: string): ReviewRef | null {
  const q = new URLSearchParams(query);
  const runId = q.get('run');
  const side = q.get('side');
  if (!runId || (side !== 'base' && side !== 'attempt') || !path.startsWith('/')) return null;
  const attempt = q.get('attempt');
  if (attempt === null) return { runId, side, path: path.slice(1) };
  if (!/^\d{1,2}$/.test(attempt)) return null;
  return { runId, side, path: path.slice(1), attempt: Number(attempt) };
}

export function logUriParts(runId: string, cellId: string, label: string): { scheme: string; path: string; query: string } {
  return {
    scheme: LOG_SCHEME,
    path: `/${label.replace(/[^A-Za-z0-9._ ,'()-]/g, '_')}.log`,
    query: new URLSearchParams({ run: runId, cell: cellId }).toString(),
  };
}

export function parseLogUri(query: string): { runId: string; cellId: string } | null {
  const q = new URLSearchParams(query);
  const runId = q.get('run');
  const cellId = q.get('cell');
  return runId && cellId ? { runId, cellId } : null;
}

/** Per-file apply outcome as one message line (conflicts named file by file). */
export function describeApplyOutcome(
  applied: boolean,
  repo: string,
  files: { path: string; ok: boolean; reason: string | null }[],
  what = 'the winner',
  branchRemoved: string | null = null,
): string {
  if (applied)
    return `Applied ${what} to ${repo}: ${files.map((f) => f.path).join(', ') || 'no files'}.${branchRemoved ? ` The run's winner branch ${branchRemoved} was removed (the change is in your working tree now).` : ''}`;
  const bad = files.filter((f) => !f.ok);
  return `Nothing was applied: ${bad.length} of ${files.length} file(s) conflict with your working tree: ${bad.map((f) => `${f.path} (${f.reason ?? 'does not apply'})`).join('; ')}. Commit or stash your changes to those files and apply again.`;
}
