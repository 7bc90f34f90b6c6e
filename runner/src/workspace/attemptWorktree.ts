import { appendFileSync, copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { InputError } from '../protocol/inputError.js';

/** Where attempt worktrees live inside the user's repository, and the branch prefix. */
export const FORGE_DIR = '.forge';
export const CELLS_DIR = join(FORGE_DIR, 'cells');
export const BRANCH_PREFIX = 'forge/attempt/';
/** Lock reasons: who owns a worktree (gc removes those whose owner is gone), or kept for review. */
export const LOCK_OWNER_PREFIX = 'forge-runner pid=';
export const LOCK_KEEP = 'forge-runner keep';

const ATTEMPT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface AttemptWorktree {
  repo: string;
  attemptId: string;
  path: string;
  branch: string;
  baseCommit: string;
  /** Untracked files copied in from .forgeinclude. */
  included: string[];
}

/**
 * Hooks are switched off: `git worktree add` would otherwise run the user's post-checkout
 * hook (husky, lfs...) for every attempt. simple-git guards hooksPath as unsafe because it
 * can point at code; /dev/null points at none.
 */
function git(dir: string): SimpleGit {
  return simpleGit({ baseDir: dir, config: ['core.hooksPath=/dev/null'], unsafe: { allowUnsafeHooksPath: true } });
}

/** Resolves the top of the user's repository, or throws InputError. */
export async function resolveRepo(repo: string): Promise<string> {
  const dir = resolve(repo);
  if (!existsSync(dir)) throw new InputError(`repository ${repo} does not exist; pass --repo with a git repository`);
  try {
    const top = (await git(dir).revparse(['--show-toplevel'])).trim();
    return top;
  } catch {
    throw new InputError(`${repo} is not inside a git repository; run "git init" there or pass another --repo`);
  }
}

/**
 * A git worktree at <repo>/.forge/cells/<attemptId> on branch forge/attempt/<attemptId>,
 * checked out at baseRef. The user's working tree, index and stash are not touched; .forge/
 * is excluded through the repository's info/exclude (the user's .gitignore stays as it is).
 */
export async function createAttemptWorktree(repo: string, baseRef: string, attemptId: string): Promise<AttemptWorktree> {
  if (!ATTEMPT_ID.test(attemptId)) {
    throw new InputError(`attempt id "${attemptId}" must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  const top = await resolveRepo(repo);
  const g = git(top);
  let baseCommit: string;
  try {
    baseCommit = (await g.revparse(['--verify', '--end-of-options', `${baseRef}^{commit}`])).trim();
  } catch {
    throw new InputError(`base ref "${baseRef}" is not a commit in ${top}; pass an existing branch, tag or commit`);
  }
  const path = join(top, CELLS_DIR, attemptId);
  const branch = BRANCH_PREFIX + attemptId;
  if (existsSync(path)) throw new InputError(`attempt ${attemptId} already has a worktree at ${path}; destroy it first or pick another id`);
  if ((await g.raw(['branch', '--list', branch])).trim() !== '') {
    throw new InputError(`branch ${branch} already exists; delete it (git branch -D ${branch}) or pick another attempt id`);
  }
  await excludeForgeDir(g, top);
  mkdirSync(dirname(path), { recursive: true });
  await g.raw(['worktree', 'add', '--quiet', '--lock', '--reason', `${LOCK_OWNER_PREFIX}${process.pid} host=${hostname()}`, '-b', branch, path, baseCommit]);
  const included = await copyForgeIncludes(top, path);
  return { repo: top, attemptId, path, branch, baseCommit, included };
}

/** Removes the worktree; deletes its branch unless keepBranch (the branch then stays for review). */
export async function destroyAttemptWorktree(wt: Pick<AttemptWorktree, 'repo' | 'path' | 'branch'>, opts: { keepBranch?: boolean } = {}): Promise<void> {
  const g = git(wt.repo);
  if (existsSync(wt.path)) {
    // A locked worktree needs --force twice to be removed.
    await g.raw(['worktree', 'remove', '--force', '--force', wt.path]);
  } else {
    await g.raw(['worktree', 'prune']);
  }
  if (!opts.keepBranch && (await g.raw(['branch', '--list', wt.branch])).trim() !== '') {
    await g.raw(['branch', '-D', wt.branch]);
  }
}

/**
 * Records the attempt's work as one commit on its branch (in the attempt's own index; the
 * user's is untouched), so the branch carries the change for review. Returns the commit.
 */
export async function commitAttempt(wt: Pick<AttemptWorktree, 'path'>, message: string): Promise<string> {
  const g = git(wt.path);
  await g.raw(['add', '-A']);
  await g.raw(['-c', 'user.name=Forge', '-c', 'user.email=forge@localhost', 'commit', '--quiet', '--allow-empty', '--no-verify', '-m', message]);
  return (await g.revparse(['HEAD'])).trim();
}

/** Marks a worktree as kept for review: gc leaves it alone. */
export async function keepAttemptWorktree(wt: Pick<AttemptWorktree, 'repo' | 'path'>): Promise<void> {
  const g = git(wt.repo);
  await g.raw(['worktree', 'unlock', wt.path]).catch(() => undefined);
  await g.raw(['worktree', 'lock', '--reason', LOCK_KEEP, wt.path]);
}

/** Excludes .forge/ through info/exclude when `dir` is the top of a git repository. */
export async function excludeForgeDirIfRepo(dir: string): Promise<void> {
  const g = git(dir);
  const top = await g.revparse(['--show-toplevel']).then((t) => t.trim(), () => null);
  if (top) await excludeForgeDir(g, top);
}

async function excludeForgeDir(g: SimpleGit, top: string): Promise<void> {
  let common = (await g.revparse(['--git-common-dir'])).trim();
  if (!isAbsolute(common)) common = join(top, common);
  const exclude = join(common, 'info', 'exclude');
  const line = `/${FORGE_DIR}/`;
  const current = existsSync(exclude) ? readFileSync(exclude, 'utf8') : '';
  if (current.split('\n').some((l) => l.trim() === line)) return;
  mkdirSync(dirname(exclude), { recursive: true });
  appendFileSync(exclude, `${current === '' || current.endsWith('\n') ? '' : '\n'}# forge-cells attempt worktrees\n${line}\n`);
}

/** Pure: .forgeinclude text -> git pathspecs (one glob per line; # comments; blank lines). */
export function parseForgeInclude(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => `:(glob)${l.replace(/^\/+/, '')}`);
}

/**
 * Copies the untracked (typically gitignored) files the user listed in .forgeinclude into the
 * worktree. Without a .forgeinclude nothing untracked is copied. Symlinks are copied as links.
 */
async function copyForgeIncludes(top: string, worktree: string): Promise<string[]> {
  const listFile = join(top, '.forgeinclude');
  if (!existsSync(listFile)) return [];
  const specs = parseForgeInclude(readFileSync(listFile, 'utf8'));
  if (specs.length === 0) return [];
  const out = await git(top).raw(['ls-files', '-z', '--others', '--', ...specs, `:(exclude)${FORGE_DIR}/`]);
  const files = out.split('\0').filter(Boolean);
  for (const rel of files) {
    const src = join(top, rel);
    const dst = join(worktree, rel);
    mkdirSync(dirname(dst), { recursive: true });
    const st = lstatSync(src);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(src), dst);
    else if (st.isFile()) copyFileSync(src, dst);
  }
  return files;
}
