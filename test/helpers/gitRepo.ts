import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handOverToCellUser } from '../../runner/src/hostguard/cellUser.js';
import type { WorktreeSource } from '../../runner/src/workspace/captureWorktreeDiff.js';
import { discoverRepository, resolveCommit } from '../../runner/src/workspace/repoLocation.js';

/** git as a test runs it by hand (the repository may belong to the cell user when tests run as root). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'safe.directory=*', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
  });
}

/**
 * A throwaway repository with one commit holding `files`. When tests run as root its work
 * tree belongs to the cell user, as the runner's own worktrees do (cells never run as root);
 * `.git` stays root's.
 */
export function makeRepo(files: Record<string, string | Buffer>): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'forge-test-repo-'));
  git(dir, 'init', '-q', '-b', 'main');
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  handOverToCellUser(dir);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function scratchDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Where a test repository's diff is taken from (resolved as the runner does before a cell). */
export async function worktreeSource(dir: string): Promise<WorktreeSource> {
  const location = await discoverRepository(dir);
  if (!location) throw new Error(`${dir} is not a git work tree`);
  const base = await resolveCommit(location, 'HEAD');
  if (!base) throw new Error(`${dir} has no commit`);
  return { location, base };
}
