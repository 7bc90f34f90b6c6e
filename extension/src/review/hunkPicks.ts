import type { PatchFileListing } from '../../../runner/src/protocol/rpcFix.js';

/**
 * Pure: the rows of the "Apply Part of Attempt" picker from review/hunks, a separator per file
 * then its hunks (a file git applies whole is one row), and the selection review/apply takes
 * from the rows picked.
 */
export type HunkPick =
  | { kind: 'file'; label: string }
  | {
      kind: 'hunk';
      label: string;
      description: string;
      path: string;
      /** The file's id: a whole file is chosen by it (never by path, which another file's id could equal). */
      fileId: string;
      hunkId: string | null;
      line: number;
      picked: boolean;
    };

export function hunkPicks(files: PatchFileListing[]): HunkPick[] {
  const rows: HunkPick[] = [];
  for (const f of files) {
    rows.push({ kind: 'file', label: f.path });
    if (f.whole !== null || f.hunks.length === 0) {
      rows.push({
        kind: 'hunk',
        label: `whole file (${f.whole ?? 'no text change'})`,
        description: counts(f.added, f.removed),
        path: f.path,
        fileId: f.id,
        hunkId: null,
        line: 1,
        picked: false,
      });
      continue;
    }
    for (const h of f.hunks)
      rows.push({
        kind: 'hunk',
        label: h.header,
        description: counts(h.added, h.removed),
        path: f.path,
        fileId: f.id,
        hunkId: h.id,
        line: Math.max(1, h.new_start),
        picked: false,
      });
  }
  return rows;
}

export function counts(added: number, removed: number): string {
  return `+${added} −${removed}`;
}

export function selectionOf(picked: HunkPick[]): { files: string[]; hunks: string[] } {
  const files: string[] = [];
  const hunks: string[] = [];
  for (const p of picked) {
    if (p.kind !== 'hunk') continue;
    if (p.hunkId === null) files.push(p.fileId);
    else hunks.push(p.hunkId);
  }
  return { files, hunks };
}

/** One line saying what a part applied and what it left out. */
export function describePartOutcome(repo: string, chosen: number, leftOut: string[]): string {
  if (leftOut.length === 0)
    return `Applied all ${chosen} part(s) of the attempt to ${repo}: nothing was left out, so the run counts as applied.`;
  const rest =
    leftOut.length === 0
      ? 'nothing was left out'
      : `left out ${leftOut.length}: ${leftOut.slice(0, 4).join('; ')}${leftOut.length > 4 ? '; …' : ''}`;
  return `Applied ${chosen} chosen part(s) to ${repo}; ${rest}. The run stays open for review: you can apply more of it later.`;
}
