import type { PatchFileListing } from '../../../runner/src/protocol/rpcFix.js';

/**
 * Pure: the rows of the "Apply Part of Attempt" picker from review/hunks, a separator per file
 * (the file's name, said once) then its hunks, each saying what it changes ("lines 3–10: +1 −1"
 * and its first changed line; a file git applies whole is one row saying why), and the
 * selection review/apply takes from the rows picked.
 */
export type HunkPick =
  | { kind: 'file'; label: string }
  | {
      kind: 'hunk';
      label: string;
      description: string;
      /** The first changed line, cleaned for one row ('' when none is known). */
      detail: string;
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
        label: `whole file: ${f.whole ?? 'no text change'}`,
        description: f.added + f.removed > 0 ? counts(f.added, f.removed) : '',
        detail: '',
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
        label: `${hunkLines(h)}: ${counts(h.added, h.removed)}`,
        description: headerContext(h.header),
        detail: previewLine(h.first_change ?? null),
        path: f.path,
        fileId: f.id,
        hunkId: h.id,
        line: Math.max(1, h.new_start),
        picked: false,
      });
  }
  return rows;
}

/** Where the hunk lands in the new file: "line 3", "lines 3–10" (a pure removal: "at line 3"). */
export function hunkLines(h: { header: string; new_start: number; new_count?: number | undefined }): string {
  const count = h.new_count ?? headerNewCount(h.header);
  if (count === null) return `line ${h.new_start}`;
  if (count === 0) return `at line ${h.new_start}`;
  return count === 1 ? `line ${h.new_start}` : `lines ${h.new_start}–${h.new_start + count - 1}`;
}

/** The new side's line count from "@@ -a,b +c,d @@" (absent d: 1); null when the header does not say. */
function headerNewCount(header: string): number | null {
  const m = /^@@ -\d+(?:,\d+)? \+\d+(?:,(\d+))? @@/.exec(header);
  return m ? (m[1] === undefined ? 1 : Number(m[1])) : null;
}

/** The function the hunk is in, as git's header says it after the second "@@" (cleaned), or ''. */
export function headerContext(header: string): string {
  const m = /^@@ [^@]* @@(.*)$/.exec(header);
  return m ? cleanLine(m[1]!, 60) : '';
}

/** Room for one picker row's detail line. */
export const PREVIEW_MAX = 80;

/** "+  return x" -> "+ return x": sign kept, indentation and control characters gone, cut with an ellipsis. */
export function previewLine(line: string | null): string {
  if (!line) return '';
  const sign = line[0] === '+' || line[0] === '-' ? (line[0] === '-' ? '−' : '+') : '';
  const text = cleanLine(sign ? line.slice(1) : line, PREVIEW_MAX - 2);
  return text ? `${sign} ${text}` : `${sign} (blank line)`;
}

/** Repository text for one row: control and bidi characters gone, blanks collapsed, at most `max` characters. */
function cleanLine(text: string, max: number): string {
  // C0/C1 controls, and the bidi overrides/isolates that could make a row read otherwise than it is.
  const clean = text
    // eslint-disable-next-line no-control-regex -- removing control characters is the point
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

/** The runner's "calc.py @@ -1,6 +1,6 @@ def f" (a hunk left out) as "calc.py lines 1–6"; anything else as it is. */
export function leftOutWords(item: string): string {
  const m = /^(.*) (@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@.*)$/.exec(item);
  return m ? `${m[1]} ${hunkLines({ header: m[2]!, new_start: Number(m[3]) })}` : item;
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
    return `Applied ${chosen} part(s) to ${repo}: with them the attempt's whole change is in your checkout, so the run counts as applied.`;
  const rest =
    leftOut.length === 0
      ? 'nothing was left out'
      : `left out ${leftOut.length}: ${leftOut.slice(0, 4).map(leftOutWords).join('; ')}${leftOut.length > 4 ? '; …' : ''}`;
  return `Applied ${chosen} chosen part(s) to ${repo}; ${rest}. The run stays open for review: you can apply more of it later.`;
}
