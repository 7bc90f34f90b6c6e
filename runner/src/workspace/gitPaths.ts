/**
 * Pure: file names as git writes them, read back exactly.
 *
 * - `git apply --numstat -z` writes one record per file, `added<TAB>removed<TAB>name<NUL>`; the
 *   name is raw bytes and may itself hold a tab, so only the first two tabs split a record.
 * - A patch names files C-quoted when they hold unusual bytes (`"a/x\tb"`, `"caf\303\251"`).
 *
 * Forge writes to a checkout by name, records names for undo and shows them: a name that is not
 * valid UTF-8 (its text form would not name the same bytes) is refused, never guessed at.
 */

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The name's text when its bytes are valid UTF-8 and come back the same; else throws one line. */
export function exactName(bytes: Buffer): string {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    throw new Error(
      `the change names a file that is not valid UTF-8 (${shownBytes(bytes)}); Forge does not apply such names, nothing was written`,
    );
  }
  if (!Buffer.from(text, 'utf8').equals(bytes))
    throw new Error(`the file name ${shownBytes(bytes)} does not read back as the same bytes; nothing was written`);
  return text;
}

function shownBytes(bytes: Buffer): string {
  let out = '';
  for (const b of bytes.subarray(0, 120))
    out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return JSON.stringify(out);
}

/** The names `git apply --numstat -z` printed, in order (stdout as bytes). Throws on a name that is not exact UTF-8. */
export function numstatNames(stdout: Buffer): string[] {
  const names: string[] = [];
  let at = 0;
  while (at < stdout.length) {
    let end = stdout.indexOf(0, at);
    if (end < 0) end = stdout.length;
    const record = stdout.subarray(at, end);
    at = end + 1;
    if (record.length === 0) continue;
    const t1 = record.indexOf(0x09);
    const t2 = t1 < 0 ? -1 : record.indexOf(0x09, t1 + 1);
    if (t2 < 0) throw new Error(`git apply --numstat printed a record without counts (${shownBytes(record)})`);
    const name = record.subarray(t2 + 1);
    if (name.length === 0) throw new Error('git apply --numstat printed a record without a name');
    names.push(exactName(name));
  }
  return names;
}

const C_ESCAPES: Record<string, string> = { a: '\x07', b: '\b', t: '\t', n: '\n', v: '\v', f: '\f', r: '\r', '"': '"', '\\': '\\' };

/**
 * A name as git wrote it in a patch, unquoted: `"..."` has C escapes (`\t`, `\"`, `\\`, octal
 * `\303`) decoded, as git's unquote_c_style does; an unquoted name is as it is. Works on the
 * Latin-1 view (one char per byte) and returns it: the result's char codes are the name's bytes.
 * Throws on a quoted name git would not have written.
 */
export function cUnquote(raw: string): string {
  if (!raw.startsWith('"')) return raw;
  let out = '';
  let i = 1;
  for (;;) {
    if (i >= raw.length) throw new Error(`unterminated quoted name ${JSON.stringify(raw.slice(0, 80))}`);
    const c = raw[i++]!;
    if (c === '"') break;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = raw[i++] ?? '';
    if (e in C_ESCAPES) out += C_ESCAPES[e];
    else if (/^[0-3][0-7][0-7]$/.test(raw.slice(i - 1, i + 2))) {
      out += String.fromCharCode(parseInt(raw.slice(i - 1, i + 2), 8));
      i += 2;
    } else throw new Error(`bad escape in quoted name ${JSON.stringify(raw.slice(0, 80))}`);
  }
  if (i !== raw.length) throw new Error(`text after a quoted name ${JSON.stringify(raw.slice(0, 80))}`);
  return out;
}

/** Latin-1 view of a name's bytes -> its text (bytes that are not UTF-8 show as U+FFFD: display only). */
export function latin1ToText(view: string): string {
  return Buffer.from(view, 'latin1').toString('utf8');
}

/**
 * The path in a `diff --git a/X b/Y` line (its text after `diff --git `), as git's
 * git_header_name reads it: quoted names are unquoted; unquoted ones, which may hold spaces,
 * are split where both halves name the same path (the only header without ---/+++ or rename
 * lines is a mode change or an empty file, whose two names are the same). Null when unsure.
 */
export function diffGitName(rest: string): string | null {
  const line = rest.replace(/\n$/, '');
  if (line.startsWith('"')) {
    const end = quotedEnd(line);
    const a = cUnquote(line.slice(0, end));
    const b = line.slice(end + 1);
    const bName = b.startsWith('"') ? cUnquote(b) : b;
    if (!a.startsWith('a/') || !bName.startsWith('b/') || a.slice(2) !== bName.slice(2)) return null;
    return a.slice(2);
  }
  // Unquoted: "a/X b/X" has length 2 * len(X) + 5.
  if ((line.length - 5) % 2 !== 0) return null;
  const x = line.slice(2, 2 + (line.length - 5) / 2);
  return line === `a/${x} b/${x}` ? x : null;
}

function quotedEnd(line: string): number {
  for (let i = 1; i < line.length; i++) {
    if (line[i] === '\\') i++;
    else if (line[i] === '"') return i + 1;
  }
  return line.length;
}
