/**
 * A small POSIX tar reader and writer (ustar plus pax and GNU long names) for what travels to
 * and from swarm cells: the base tree layer, the attempt's changes and what a cell sends
 * back. Only regular files, directories and symbolic links exist here; anything else a
 * reader meets is reported, never created.
 */

export type TarEntryType = 'file' | 'dir' | 'symlink';

export interface TarEntry {
  name: string;
  type: TarEntryType;
  mode: number;
  uid: number;
  gid: number;
  /** Seconds since the epoch. */
  mtime: number;
  data?: Buffer;
  linkname?: string;
}

export interface ReadTarResult {
  entries: TarEntry[];
  /** Names of entries of other kinds (devices, FIFOs) left out. */
  skipped: string[];
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function paxRecord(key: string, value: string): string {
  // The length prefix counts itself: grow it until the total is stable.
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

function header(
  name: string,
  typeflag: string,
  e: { mode: number; uid: number; gid: number; mtime: number },
  size: number,
  linkname = '',
): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(e.mode & 0o7777, 8), 100, 'ascii');
  h.write(octal(e.uid, 8), 108, 'ascii');
  h.write(octal(e.gid, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.max(0, Math.floor(e.mtime)), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(typeflag, 156, 'ascii');
  h.write(linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

function padded(data: Buffer): Buffer[] {
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, Buffer.alloc(BLOCK - rest)];
}

/** Pure: a tar archive of `entries`, in order (long names and link targets through pax headers). */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  return Buffer.concat(tarParts(entries));
}

/**
 * Pure: the same archive as pieces, file contents not copied (a large archive is streamed, not
 * joined); `end: false` leaves out the two end blocks, for an archive that goes on.
 */
export function tarParts(entries: readonly TarEntry[], end = true): Buffer[] {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const name = e.type === 'dir' && !e.name.endsWith('/') ? `${e.name}/` : e.name;
    const link = e.linkname ?? '';
    if (Buffer.byteLength(name) > 99 || Buffer.byteLength(link) > 99) {
      const pax = Buffer.from(
        (Buffer.byteLength(name) > 99 ? paxRecord('path', name) : '') + (Buffer.byteLength(link) > 99 ? paxRecord('linkpath', link) : ''),
      );
      parts.push(header('././@PaxHeader', 'x', { mode: 0o644, uid: 0, gid: 0, mtime: e.mtime }, pax.length), ...padded(pax));
    }
    const shortName = Buffer.from(name).subarray(0, 99).toString('utf8');
    const shortLink = Buffer.from(link).subarray(0, 99).toString('utf8');
    if (e.type === 'file') {
      const data = e.data ?? Buffer.alloc(0);
      parts.push(header(shortName, '0', e, data.length), ...padded(data));
    } else if (e.type === 'dir') {
      parts.push(header(shortName, '5', e, 0));
    } else {
      parts.push(header(shortName, '2', e, 0, shortLink));
    }
  }
  if (end) parts.push(Buffer.alloc(BLOCK * 2));
  return parts;
}

/** Pure: one regular file whose content is `content` (pieces, not copied), as archive pieces without the end blocks. */
export function tarFileParts(
  name: string,
  content: readonly Buffer[],
  meta: { mode: number; uid: number; gid: number; mtime: number },
): Buffer[] {
  const size = content.reduce((n, b) => n + b.length, 0);
  const rest = size % BLOCK;
  return [header(name, '0', meta, size), ...content, ...(rest === 0 ? [] : [Buffer.alloc(BLOCK - rest)])];
}

/** The two zero blocks that end an archive. */
export const TAR_END = (): Buffer => Buffer.alloc(BLOCK * 2);

function field(h: Buffer, start: number, len: number): string {
  const raw = h.subarray(start, start + len);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul === -1 ? len : nul).toString('utf8');
}

function number(h: Buffer, start: number, len: number): number {
  // GNU base-256 for values octal cannot hold.
  if ((h[start]! & 0x80) !== 0) {
    let n = 0;
    for (let i = start + 1; i < start + len; i++) n = n * 256 + h[i]!;
    return n;
  }
  const s = field(h, start, len).trim();
  return s === '' ? 0 : parseInt(s, 8);
}

function parsePax(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const sp = data.indexOf(0x20, at);
    if (sp === -1) break;
    const len = Number(data.subarray(at, sp).toString('ascii'));
    if (!Number.isInteger(len) || len <= 0) break;
    const rec = data.subarray(sp + 1, at + len - 1).toString('utf8');
    const eq = rec.indexOf('=');
    if (eq > 0) out.set(rec.slice(0, eq), rec.slice(eq + 1));
    at += len;
  }
  return out;
}

/**
 * Pure: the entries of a tar archive (or of several concatenated). Hard links become copies of the file they name;
 * devices and FIFOs are named in `skipped`. Throws on a malformed archive.
 */
export function readTar(buf: Buffer): ReadTarResult {
  const entries: TarEntry[] = [];
  const skipped: string[] = [];
  const byName = new Map<string, TarEntry>();
  let at = 0;
  let longName: string | null = null;
  let longLink: string | null = null;
  let pax = new Map<string, string>();
  while (at + BLOCK <= buf.length) {
    const h = buf.subarray(at, at + BLOCK);
    // Zero blocks end one archive; archives written one after another continue after them.
    if (h.every((b) => b === 0)) {
      at += BLOCK;
      continue;
    }
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
    if (sum !== number(h, 148, 8)) throw new Error(`tar archive: bad header checksum at byte ${at}`);
    const size = number(h, 124, 12);
    const type = String.fromCharCode(h[156]!);
    const dataStart = at + BLOCK;
    if (dataStart + size > buf.length) throw new Error(`tar archive: truncated entry at byte ${at}`);
    const data = buf.subarray(dataStart, dataStart + size);
    at = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      pax = parsePax(data);
      continue;
    }
    if (type === 'g') continue;
    if (type === 'L') {
      longName = field(data, 0, data.length);
      continue;
    }
    if (type === 'K') {
      longLink = field(data, 0, data.length);
      continue;
    }
    const prefix = field(h, 345, 155);
    let name = pax.get('path') ?? longName ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    const linkname = pax.get('linkpath') ?? longLink ?? field(h, 157, 100);
    pax = new Map();
    longName = null;
    longLink = null;
    const meta = { mode: number(h, 100, 8), uid: number(h, 108, 8), gid: number(h, 116, 8), mtime: number(h, 136, 12) };
    if (type === '5') {
      name = name.replace(/\/+$/, '');
      entries.push({ name, type: 'dir', ...meta });
    } else if (type === '2') {
      entries.push({ name, type: 'symlink', ...meta, linkname });
    } else if (type === '1') {
      const target = byName.get(linkname);
      if (target) {
        const copy: TarEntry = { ...target, name, ...meta };
        entries.push(copy);
        byName.set(name, copy);
      } else skipped.push(name);
    } else if (type === '0' || type === '\0' || type === '7') {
      const e: TarEntry = { name, type: 'file', ...meta, data: Buffer.from(data) };
      entries.push(e);
      byName.set(name, e);
    } else {
      skipped.push(name);
    }
  }
  return { entries, skipped };
}
