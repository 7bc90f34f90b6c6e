import { closeSync, constants } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { listDirectory, openDirectoryAt, readRegularAt } from '../../hostguard/beneath.js';
import { ToolError } from './toolError.js';
import { WorktreeFiles } from './worktreeFiles.js';

/** Caps on what a file tool reads and returns to the model. */
export const TOOL_LIMITS = {
  readLines: 400,
  readBytes: 64 * 1024,
  /** read_file looks at most this much of a file (it pages by lines within it). */
  readFileBytes: 8 * 1024 * 1024,
  listEntries: 500,
  searchMatches: 200,
  /** search skips larger files and stops after reading this much in all, or visiting this many entries. */
  searchFileBytes: 2 * 1024 * 1024,
  searchTotalBytes: 64 * 1024 * 1024,
  searchEntries: 50_000,
  /** search's answer in all, and the path shown with each match: a deep tree cannot make it huge. */
  searchOutputBytes: 64 * 1024,
  searchPathChars: 300,
  writeBytes: 1024 * 1024,
  /** edit_file rewrites files up to this size. */
  editFileBytes: 8 * 1024 * 1024,
} as const;

const str = (v: unknown, name: string): string => {
  if (typeof v !== 'string') throw new ToolError(`${name} must be a string`);
  return v;
};
const optInt = (v: unknown, name: string): number | undefined => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new ToolError(`${name} must be a positive whole number`);
  return v;
};

function isBinary(buf: Buffer): boolean {
  return buf.subarray(0, 8000).includes(0);
}

const HIDDEN = new Set(['.git', '.forge']);

/**
 * A name from the tree as the model reads it: control characters (a newline would forge a
 * line of the answer) and bytes that are not UTF-8 shown as \xNN.
 */
export function shownName(name: Buffer | string): string {
  const bytes = typeof name === 'string' ? Buffer.from(name) : name;
  const text = isUtf8(bytes)
    ? bytes.toString('utf8')
    : [...bytes].map((b) => (b < 0x80 ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('');
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function listFiles(worktree: string, args: { path?: unknown }): string {
  const { entries, cut } = new WorktreeFiles(worktree).list(args.path ?? '.');
  const names = entries
    .filter((e) => !HIDDEN.has(e.name.toString('latin1')))
    .map((e) => {
      const name = shownName(e.name);
      return e.isDirectory() ? `${name}/` : e.isSymbolicLink() ? `${name}@` : name;
    })
    .sort();
  const shown = names.slice(0, TOOL_LIMITS.listEntries);
  const more = names.length - shown.length;
  if (cut) return `${shown.join('\n')}\n[... more entries: the directory has over ${names.length} (not all were read)]`;
  return shown.join('\n') + (more > 0 ? `\n[... ${more} more entries]` : '');
}

export function readFile(worktree: string, args: { path?: unknown; start_line?: unknown; end_line?: unknown }): string {
  const file = new WorktreeFiles(worktree).read(args.path, TOOL_LIMITS.readFileBytes);
  if (isBinary(file.data)) throw new ToolError(`${String(args.path)} is a binary file (${file.size} bytes)`);
  const lines = file.data.toString('utf8').split('\n');
  // A cut at the byte cap leaves a partial last line: it is not shown as if complete.
  if (file.truncated) lines.pop();
  const start = optInt(args.start_line, 'start_line') ?? 1;
  const end = Math.min(
    optInt(args.end_line, 'end_line') ?? start + TOOL_LIMITS.readLines - 1,
    lines.length,
    start + TOOL_LIMITS.readLines - 1,
  );
  if (start > lines.length)
    throw new ToolError(`start_line ${start} is past the end (${lines.length} lines${file.truncated ? ' read' : ''})`);
  let out = lines
    .slice(start - 1, end)
    .map((l, i) => `${start + i}: ${l}`)
    .join('\n');
  if (Buffer.byteLength(out) > TOOL_LIMITS.readBytes) out = out.slice(0, TOOL_LIMITS.readBytes) + '\n[... truncated]';
  if (end < lines.length) return `${out}\n[... lines ${end + 1}-${lines.length} not shown; pass start_line]`;
  if (file.truncated) return `${out}\n[... the file is ${file.size} bytes; only its first ${TOOL_LIMITS.readFileBytes} can be read]`;
  return out;
}

/** `written`: told the path (relative to the root, links resolved) of every file a tool wrote. */
export function writeFile(worktree: string, args: { path?: unknown; content?: unknown }, written?: (rel: string) => void): string {
  const content = str(args.content, 'content');
  if (Buffer.byteLength(content) > TOOL_LIMITS.writeBytes) throw new ToolError(`content is larger than ${TOOL_LIMITS.writeBytes} bytes`);
  const rel = new WorktreeFiles(worktree).write(args.path, Buffer.from(content));
  written?.(rel);
  return `wrote ${rel} (${Buffer.byteLength(content)} bytes)`;
}

export function editFile(
  worktree: string,
  args: { path?: unknown; old_string?: unknown; new_string?: unknown },
  written?: (rel: string) => void,
): string {
  const oldString = str(args.old_string, 'old_string');
  const newString = str(args.new_string, 'new_string');
  if (oldString === '') throw new ToolError('old_string must not be empty; use write_file to create a file');
  const files = new WorktreeFiles(worktree);
  let file;
  try {
    file = files.read(args.path, TOOL_LIMITS.editFileBytes);
  } catch (e) {
    if (e instanceof ToolError && /does not exist/.test(e.message))
      throw new ToolError(`${String(args.path)} does not exist; use write_file to create it`);
    throw e;
  }
  if (file.truncated)
    throw new ToolError(`${String(args.path)} is ${file.size} bytes; edit_file handles files up to ${TOOL_LIMITS.editFileBytes}`);
  const text = file.data.toString('utf8');
  const first = text.indexOf(oldString);
  if (first === -1) throw new ToolError(`old_string was not found in ${String(args.path)}; read the file and copy the text exactly`);
  if (text.indexOf(oldString, first + 1) !== -1)
    throw new ToolError(
      `old_string occurs more than once in ${String(args.path)}; include more surrounding lines so it matches exactly once`,
    );
  const rel = files.write(args.path, Buffer.from(text.slice(0, first) + newString + text.slice(first + oldString.length)));
  written?.(rel);
  return `edited ${rel}`;
}

const SEARCH_SKIPPED = new Set(['.git', '.forge', 'node_modules']);

/**
 * Plain-text search below a directory. Bounded: larger files are skipped, and the walk stops
 * after reading a total budget or visiting a number of entries. Links are not followed.
 */
export function searchFiles(worktree: string, args: { pattern?: unknown; path?: unknown }): string {
  const pattern = str(args.pattern, 'pattern');
  if (pattern === '') throw new ToolError('pattern must not be empty');
  const files = new WorktreeFiles(worktree);
  const start = files.openDirectory(args.path ?? '.');
  const matches: string[] = [];
  let visited = 0;
  let bytes = 0;
  let answer = 0;
  let stopped: string | null = null;
  const stack: { fd: number; rel: string }[] = [{ fd: start.fd, rel: start.rel === '.' ? '' : shownName(start.rel) }];
  const prefix = (rel: string, name: string) => (rel === '' ? name : `${rel}/${name}`);
  // A path deeper than a reader needs is shown by its end: the file's own name stays in view.
  const shortened = (path: string) =>
    path.length <= TOOL_LIMITS.searchPathChars ? path : `...${path.slice(path.length - TOOL_LIMITS.searchPathChars + 3)}`;
  try {
    while (stack.length > 0 && !stopped) {
      const dir = stack.pop()!;
      try {
        const { entries } = listDirectory(dir.fd, TOOL_LIMITS.searchEntries - visited + 1);
        const subdirs: { fd: number; rel: string }[] = [];
        for (const e of entries) {
          if (matches.length >= TOOL_LIMITS.searchMatches) {
            stopped = 'matches';
            break;
          }
          if (++visited > TOOL_LIMITS.searchEntries) {
            stopped = `after ${TOOL_LIMITS.searchEntries} entries`;
            break;
          }
          if (SEARCH_SKIPPED.has(e.name.toString('latin1'))) continue;
          const name = shownName(e.name);
          if (e.isDirectory()) {
            try {
              subdirs.push({
                fd: openDirectoryAt(dir.fd, e.name, constants.O_RDONLY),
                rel: shortened(prefix(dir.rel, name)),
              });
            } catch {
              /* changed meanwhile: skipped */
            }
          } else if (e.isFile()) {
            const text = readSmallText(dir.fd, e.name, TOOL_LIMITS.searchFileBytes);
            if (text === null) continue;
            bytes += text.length;
            if (bytes > TOOL_LIMITS.searchTotalBytes) {
              stopped = `after reading ${TOOL_LIMITS.searchTotalBytes} bytes`;
              break;
            }
            const lines = text.split('\n');
            for (let i = 0; i < lines.length && matches.length < TOOL_LIMITS.searchMatches && !stopped; i++) {
              if (!lines[i]!.includes(pattern)) continue;
              const match = `${shortened(prefix(dir.rel, name))}:${i + 1}: ${lines[i]!.slice(0, 300)}`;
              answer += match.length + 1;
              if (answer > TOOL_LIMITS.searchOutputBytes) stopped = `after ${TOOL_LIMITS.searchOutputBytes} characters of matches`;
              else matches.push(match);
            }
            if (stopped) break;
          }
        }
        // Depth first, in name order: subdirectories go on the stack reversed.
        stack.push(...subdirs.reverse());
      } finally {
        closeSync(dir.fd);
      }
    }
  } finally {
    for (const d of stack) closeSync(d.fd);
  }
  if (matches.length === 0) return `no matches for ${JSON.stringify(pattern)}${stopped ? ` (search stopped ${stopped})` : ''}`;
  const more =
    stopped && stopped !== 'matches'
      ? `\n[... search stopped ${stopped}]`
      : matches.length >= TOOL_LIMITS.searchMatches
        ? '\n[... more matches not shown]'
        : '';
  return matches.join('\n') + more;
}

/** A regular text file's content when it is at most `max` bytes; null otherwise. */
function readSmallText(dirFd: number, name: Buffer, max: number): string | null {
  const data = readRegularAt(dirFd, name, max);
  return Buffer.isBuffer(data) && !isBinary(data) ? data.toString('utf8') : null;
}
