import { cUnquote, diffGitName, latin1ToText } from './gitPaths.js';
import { type PatchBytes, patchStructure } from './patchBytes.js';

/**
 * Pure: a patch (as git diff writes it) split into files and hunks with stable ids, and a
 * patch rebuilt from a chosen subset. Works on the Latin-1 view of the bytes (one char per
 * byte), so a patch rebuilt from every hunk is byte-for-byte the patch it came from.
 *
 * Ids: file `f<i>` (its place in the patch), hunk `f<i>h<j>`. A file git cannot apply hunk
 * by hunk (binary, new, deleted, renamed, copied, mode change, symbolic link) is one unit,
 * chosen by its file id, never by hunk. Selections are by id only: a path is no id (a file
 * may be named `f2`, two display names may look alike).
 */
export interface PatchHunk {
  id: string;
  /** `@@ -12,6 +12,7 @@ function name`, shown to the user (display text, not bytes). */
  header: string;
  added: number;
  removed: number;
  /** Where the hunk starts in the old and new file (1-based, as in its header). */
  oldStart: number;
  newStart: number;
}

/** A hunk as a picker lists it: where it ends too, and its first changed line (what it changes). */
export interface ListedHunk extends PatchHunk {
  newCount: number;
  /** The first added or removed line with its sign ("+  return x"), as text, at most FIRST_CHANGE_MAX characters; null: none. */
  firstChange: string | null;
}

/** Enough of a line to say what a hunk changes; the picker trims it further. */
export const FIRST_CHANGE_MAX = 200;

export interface PatchFile {
  id: string;
  /** The file's name as text (git's quoting undone; display only when not valid UTF-8). */
  path: string;
  /** Why the file cannot be split into hunks, or null. */
  whole: string | null;
  hunks: PatchHunk[];
  added: number;
  removed: number;
}

interface ParsedHunk extends PatchHunk {
  /** The header line as its bytes were (Latin-1 view, newline included). */
  rawHeader: string;
  oldCount: number;
  newCount: number;
  /** The hunk's text after its header line (body lines with their newlines). */
  body: string;
  /** The header line's text after `@@ -a,b +c,d @@` (its function context and newline). */
  tail: string;
}

interface ParsedFile extends Omit<PatchFile, 'hunks'> {
  head: string;
  /** A rename's source (the file the apply removes), as text, or null. */
  renamedFrom: string | null;
  hunks: ParsedHunk[];
  /** Text after the last hunk (nothing in git's output; kept so nothing is lost). */
  rest: string;
}

export interface ParsedPatch {
  preamble: string;
  files: ParsedFile[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/s;

function splitLines(text: string): string[] {
  const lines = text.split('\n').map((l) => `${l}\n`);
  // The split's last piece has no newline of its own.
  const last = lines.pop()!.slice(0, -1);
  if (last !== '') lines.push(last);
  return lines;
}

/** A name as git writes it on a ---/+++/rename line (Latin-1 view): unquoted, `prefix` dropped, as text. */
function nameOn(raw: string, prefix: string): string {
  // git adds a tab after an unquoted name that holds a space; a quoted one ends at its quote.
  const name = raw.startsWith('"') ? cUnquote(raw) : raw.replace(/\t$/, '');
  return latin1ToText(prefix && name.startsWith(prefix) ? name.slice(prefix.length) : name);
}

/** The file's path as git apply reads it: +++ (or --- for a deletion), rename/copy to, else the diff --git line. */
function filePath(head: string): string {
  const plus = /^\+\+\+ (.*)$/m.exec(head);
  if (plus && plus[1] !== '/dev/null') return nameOn(plus[1]!, 'b/');
  const minus = /^--- (.*)$/m.exec(head);
  if (minus && minus[1] !== '/dev/null') return nameOn(minus[1]!, 'a/');
  const renamed = /^rename to (.*)$/m.exec(head) ?? /^copy to (.*)$/m.exec(head);
  if (renamed) return nameOn(renamed[1]!, '');
  const git = /^diff --git (.*)$/m.exec(head);
  const name = git ? diffGitName(git[1]!) : null;
  return name === null ? '?' : latin1ToText(name);
}

function renameSource(head: string): string | null {
  const m = /^rename from (.*)$/m.exec(head);
  return m ? nameOn(m[1]!, '') : null;
}

function wholeReason(head: string, hunks: number): string | null {
  if (/^(GIT binary patch|Binary files )/m.test(head)) return 'binary';
  if (/^(new file mode|deleted file mode|new mode|old mode|index [0-9a-f]+\.\.[0-9a-f]+) 120000$/m.test(head)) return 'symbolic link';
  if (/^new file mode /m.test(head)) return 'new file';
  if (/^deleted file mode /m.test(head)) return 'deleted file';
  if (/^(rename|copy) from /m.test(head)) return 'renamed';
  if (/^old mode /m.test(head)) return 'mode change';
  if (hunks === 0) return 'no text change';
  return null;
}

/** Throws (one line) when the text is not a patch git diff could have written. */
export function parsePatch(patch: PatchBytes | string): ParsedPatch {
  const lines = splitLines(patchStructure(patch));
  let i = 0;
  let preamble = '';
  while (i < lines.length && !lines[i]!.startsWith('diff --git ')) preamble += lines[i++];
  const files: ParsedFile[] = [];
  while (i < lines.length) {
    let head = lines[i++]!;
    while (i < lines.length && !lines[i]!.startsWith('@@ ') && !lines[i]!.startsWith('diff --git ')) head += lines[i++];
    const hunks: ParsedHunk[] = [];
    const fileIndex = files.length;
    while (i < lines.length && lines[i]!.startsWith('@@ ')) {
      const header = lines[i++]!;
      const m = HUNK_HEADER.exec(header);
      if (!m) throw new Error(`malformed hunk header ${JSON.stringify(header.slice(0, 80))}`);
      const oldCount = m[2] === undefined ? 1 : Number(m[2]);
      const newCount = m[4] === undefined ? 1 : Number(m[4]);
      // The body is read by its counts (a removed line may itself read "diff --git").
      let oldLeft = oldCount;
      let newLeft = newCount;
      let body = '';
      let added = 0;
      let removed = 0;
      while (i < lines.length && (oldLeft > 0 || newLeft > 0 || lines[i]!.startsWith('\\'))) {
        const line = lines[i++]!;
        const c = line[0];
        if (c === '+') {
          newLeft--;
          added++;
        } else if (c === '-') {
          oldLeft--;
          removed++;
        } else if (c === ' ' || line === '\n') {
          oldLeft--;
          newLeft--;
        } else if (c !== '\\') throw new Error(`malformed hunk line ${JSON.stringify(line.slice(0, 80))}`);
        body += line;
      }
      if (oldLeft !== 0 || newLeft !== 0) throw new Error('a hunk ends before its header said it would');
      hunks.push({
        id: `f${fileIndex}h${hunks.length}`,
        header: Buffer.from(header.replace(/\n$/, ''), 'latin1').toString('utf8'),
        rawHeader: header,
        added,
        removed,
        oldStart: Number(m[1]),
        newStart: Number(m[3]),
        oldCount,
        newCount,
        body,
        tail: m[5]!,
      });
    }
    let rest = '';
    while (i < lines.length && !lines[i]!.startsWith('diff --git ')) rest += lines[i++];
    files.push({
      id: `f${fileIndex}`,
      path: filePath(head),
      renamedFrom: renameSource(head),
      whole: wholeReason(head, hunks.length),
      head,
      hunks,
      rest,
      added: hunks.reduce((n, h) => n + h.added, 0),
      removed: hunks.reduce((n, h) => n + h.removed, 0),
    });
  }
  return { preamble, files };
}

/** The sources of the patch's renames (files the apply removes), as text. */
export function renameSources(patch: PatchBytes | string): string[] {
  return parsePatch(patch).files.flatMap((f) => (f.renamedFrom === null ? [] : [f.renamedFrom]));
}

/** What a picker shows: files and hunks without their bytes (a line of each, for a preview). */
export function listPatchFiles(patch: PatchBytes | string): (Omit<PatchFile, 'hunks'> & { hunks: ListedHunk[] })[] {
  return parsePatch(patch).files.map((f) => ({
    id: f.id,
    path: f.path,
    whole: f.whole,
    added: f.added,
    removed: f.removed,
    hunks: f.hunks.map(({ id, header, added, removed, oldStart, newStart, newCount, body }) => ({
      id,
      header,
      added,
      removed,
      oldStart,
      newStart,
      newCount,
      firstChange: firstChangedLine(body),
    })),
  }));
}

/** The body's first "+" or "-" line as UTF-8 text (a Latin-1 view cut may end inside a character: it shows as U+FFFD). */
function firstChangedLine(body: string): string | null {
  const line = body.split('\n').find((l) => l.startsWith('+') || l.startsWith('-'));
  if (line === undefined) return null;
  return Buffer.from(line.slice(0, FIRST_CHANGE_MAX * 4), 'latin1')
    .toString('utf8')
    .replace(/\r$/, '')
    .slice(0, FIRST_CHANGE_MAX);
}

export interface PatchSelection {
  /** Whole files, by file id (`f2`); never by path. */
  files?: readonly string[];
  /** Hunks, by id (`f0h1`). */
  hunks?: readonly string[];
}

export interface SelectedPatch {
  patch: PatchBytes;
  /** Every hunk chosen (whole files count all theirs). */
  chosen: string[];
  /** What was left out, one line each (`src/a.ts @@ -12,6 +12,7 @@`), for the result. */
  leftOut: string[];
  /** True when nothing was left out. */
  complete: boolean;
}

/**
 * The patch holding only the chosen files and hunks, each kept hunk's new-side start moved by
 * what the hunks left out before it would have added. Unknown ids, and a hunk of a file that
 * goes whole, throw one line naming them.
 */
export function selectFromPatch(patch: PatchBytes | string, selection: PatchSelection): SelectedPatch {
  const parsed = parsePatch(patch);
  const wantFiles = new Set(selection.files ?? []);
  const wantHunks = new Set(selection.hunks ?? []);
  const known = new Set(parsed.files.map((f) => f.id));
  const unknownFiles = [...wantFiles].filter((f) => !known.has(f));
  if (unknownFiles.length)
    throw new Error(
      `unknown file id(s) ${unknownFiles
        .slice(0, 5)
        .map((f) => JSON.stringify(f))
        .join(', ')}: choose whole files by their id (f0, f1, …) from review/hunks, not by path`,
    );
  const allHunks = new Map(parsed.files.flatMap((f) => f.hunks.map((h) => [h.id, f] as const)));
  const unknownHunks = [...wantHunks].filter((h) => !allHunks.has(h));
  if (unknownHunks.length) throw new Error(`unknown hunk id(s) ${unknownHunks.slice(0, 5).join(', ')}; see review/hunks`);
  const split = [...wantHunks].map((h) => allHunks.get(h)!).find((f) => f.whole !== null);
  if (split) throw new Error(`${split.path} (${split.whole}) is applied whole: choose it by its file id ${split.id}, not by hunk`);

  let out = parsed.preamble;
  const chosen: string[] = [];
  const leftOut: string[] = [];
  for (const f of parsed.files) {
    const wholeFile = wantFiles.has(f.id);
    const kept = wholeFile ? f.hunks : f.hunks.filter((h) => wantHunks.has(h.id));
    if (f.whole !== null || f.hunks.length === 0) {
      if (wholeFile) out += f.head + f.hunks.map((h) => h.rawHeader + h.body).join('') + f.rest;
      else leftOut.push(`${f.path} (${f.whole ?? 'whole file'})`);
      if (wholeFile) chosen.push(...f.hunks.map((h) => h.id));
      continue;
    }
    for (const h of f.hunks) if (!kept.includes(h)) leftOut.push(`${f.path} ${h.header}`);
    if (kept.length === 0) continue;
    out += f.head;
    let shift = 0;
    for (const h of f.hunks) {
      if (!kept.includes(h)) {
        shift -= h.newCount - h.oldCount;
        continue;
      }
      chosen.push(h.id);
      const newStart = shift === 0 ? h.newStart : h.newStart + shift;
      const header =
        shift === 0 ? h.rawHeader : `@@ -${h.oldStart}${countPart(h.oldCount)} +${newStart}${countPart(h.newCount)} @@${h.tail}`;
      out += header + h.body;
    }
    out += f.rest;
  }
  return { patch: Buffer.from(out, 'latin1'), chosen, leftOut, complete: leftOut.length === 0 };
}

function countPart(n: number): string {
  return n === 1 ? '' : `,${n}`;
}
