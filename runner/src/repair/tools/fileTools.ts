import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { resolveInWorktree, ToolError } from './worktreePath.js';

/** Caps on what a file tool returns to the model. */
export const TOOL_LIMITS = { readLines: 400, readBytes: 64 * 1024, listEntries: 500, searchMatches: 200, writeBytes: 1024 * 1024 } as const;

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

export function listFiles(worktree: string, args: { path?: unknown }): string {
  const dir = resolveInWorktree(worktree, args.path ?? '.');
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ToolError(`${String(args.path ?? '.')} is not a directory`);
  const entries = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.name !== '.git' && e.name !== '.forge')
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort();
  const shown = entries.slice(0, TOOL_LIMITS.listEntries);
  return shown.join('\n') + (entries.length > shown.length ? `\n[... ${entries.length - shown.length} more entries]` : '');
}

export function readFile(worktree: string, args: { path?: unknown; start_line?: unknown; end_line?: unknown }): string {
  const file = resolveInWorktree(worktree, args.path);
  if (!existsSync(file) || !statSync(file).isFile()) throw new ToolError(`${String(args.path)} does not exist or is not a file`);
  const buf = readFileSync(file);
  if (isBinary(buf)) throw new ToolError(`${String(args.path)} is a binary file (${buf.length} bytes)`);
  const lines = buf.toString('utf8').split('\n');
  const start = optInt(args.start_line, 'start_line') ?? 1;
  const end = Math.min(optInt(args.end_line, 'end_line') ?? start + TOOL_LIMITS.readLines - 1, lines.length, start + TOOL_LIMITS.readLines - 1);
  if (start > lines.length) throw new ToolError(`start_line ${start} is past the end (${lines.length} lines)`);
  let out = lines.slice(start - 1, end).map((l, i) => `${start + i}: ${l}`).join('\n');
  if (Buffer.byteLength(out) > TOOL_LIMITS.readBytes) out = out.slice(0, TOOL_LIMITS.readBytes) + '\n[... truncated]';
  return end < lines.length ? `${out}\n[... lines ${end + 1}-${lines.length} not shown; pass start_line]` : out;
}

export function writeFile(worktree: string, args: { path?: unknown; content?: unknown }): string {
  const file = resolveInWorktree(worktree, args.path);
  const content = str(args.content, 'content');
  if (Buffer.byteLength(content) > TOOL_LIMITS.writeBytes) throw new ToolError(`content is larger than ${TOOL_LIMITS.writeBytes} bytes`);
  if (existsSync(file) && statSync(file).isDirectory()) throw new ToolError(`${String(args.path)} is a directory`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content);
  return `wrote ${relative(worktree, file)} (${Buffer.byteLength(content)} bytes)`;
}

export function editFile(worktree: string, args: { path?: unknown; old_string?: unknown; new_string?: unknown }): string {
  const file = resolveInWorktree(worktree, args.path);
  const oldString = str(args.old_string, 'old_string');
  const newString = str(args.new_string, 'new_string');
  if (oldString === '') throw new ToolError('old_string must not be empty; use write_file to create a file');
  if (!existsSync(file) || !statSync(file).isFile()) throw new ToolError(`${String(args.path)} does not exist; use write_file to create it`);
  const text = readFileSync(file, 'utf8');
  const first = text.indexOf(oldString);
  if (first === -1) throw new ToolError(`old_string was not found in ${String(args.path)}; read the file and copy the text exactly`);
  if (text.indexOf(oldString, first + 1) !== -1) throw new ToolError(`old_string occurs more than once in ${String(args.path)}; include more surrounding lines so it matches exactly once`);
  writeFileSync(file, text.slice(0, first) + newString + text.slice(first + oldString.length));
  return `edited ${relative(worktree, file)}`;
}

export function searchFiles(worktree: string, args: { pattern?: unknown; path?: unknown }): string {
  const pattern = str(args.pattern, 'pattern');
  if (pattern === '') throw new ToolError('pattern must not be empty');
  const start = resolveInWorktree(worktree, args.path ?? '.');
  const matches: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (matches.length >= TOOL_LIMITS.searchMatches) return;
      if (e.name === '.git' || e.name === '.forge' || e.name === 'node_modules') continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const buf = readFileSync(p);
        if (isBinary(buf) || buf.length > 2 * 1024 * 1024) continue;
        buf.toString('utf8').split('\n').forEach((line, i) => {
          if (matches.length < TOOL_LIMITS.searchMatches && line.includes(pattern)) matches.push(`${relative(worktree, p)}:${i + 1}: ${line.slice(0, 300)}`);
        });
      }
    }
  };
  if (statSync(start).isDirectory()) walk(start);
  else throw new ToolError(`${String(args.path)} is not a directory`);
  return matches.length === 0 ? `no matches for ${JSON.stringify(pattern)}` : matches.join('\n') + (matches.length >= TOOL_LIMITS.searchMatches ? '\n[... more matches not shown]' : '');
}
