import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handOverToCellUser } from '../../runner/src/hostguard/cellUser.js';
import { FixReportSchema } from '../../runner/src/protocol/fixReport.js';
import { git } from './gitRepo.js';

/** A package.json of a private package with these scripts. */
export const npmPackage = (name: string, scripts: Record<string, string>) =>
  JSON.stringify({ name, version: '1.0.0', private: true, scripts });

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

export type ToolCall = { name: string; arguments: Record<string, unknown> };

/** `fix` on a new repository of `files` with one attempt whose turns make these tool calls. */
/** Files named in `executable` get mode 0755. */
export function fixWith(files: Record<string, string>, turns: ToolCall[][], args: string[] = [], executable: readonly string[] = []) {
  return fixWithAttempts(files, [turns], args, executable);
}

/** `fix` on a new repository of `files` with one attempt per entry of `attempts`, each making its turns' tool calls. */
export function fixWithAttempts(
  files: Record<string, string>,
  attempts: ToolCall[][][],
  args: string[] = [],
  executable: readonly string[] = [],
) {
  const dir = mkdtempSync(join(tmpdir(), 'forge-verdict-'));
  const repo = join(dir, 'repo');
  try {
    for (const [rel, content] of Object.entries(files)) {
      mkdirSync(join(repo, rel, '..'), { recursive: true });
      writeFileSync(join(repo, rel), content, { mode: executable.includes(rel) ? 0o755 : 0o644 });
    }
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'base');
    handOverToCellUser(repo);
    const replay = join(dir, 'replay.json');
    writeFileSync(
      replay,
      JSON.stringify({
        version: 1,
        attempts: attempts.map((turns) => [...turns.map((tool_calls) => ({ tool_calls })), { content: 'done' }]),
      }),
    );
    const r = spawnSync(
      process.execPath,
      [
        RUNNER,
        'fix',
        '--repo',
        repo,
        '--issue-text',
        'fix the bug',
        '--attempts',
        String(attempts.length),
        '--provider',
        'host',
        '--model',
        `replay:${replay}`,
        '--json',
        ...args,
      ],
      { encoding: 'utf8', timeout: 240_000 },
    );
    return { status: r.status, stderr: r.stderr, report: r.stdout ? FixReportSchema.parse(JSON.parse(r.stdout)) : null };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const write = (path: string, content: string): ToolCall => ({ name: 'write_file', arguments: { path, content } });
export const edit = (path: string, old_string: string, new_string: string): ToolCall => ({
  name: 'edit_file',
  arguments: { path, old_string, new_string },
});
