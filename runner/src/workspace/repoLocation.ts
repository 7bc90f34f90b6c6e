import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { InputError } from '../protocol/inputError.js';
import { dedicatedCellUser } from '../hostguard/cellUser.js';
import { isInside } from '../hostguard/pathInside.js';
import { type GitTarget, runGit, userGlobalGitConfig } from './safeGit.js';
import { readRegularPath } from '../hostguard/readRegularFile.js';

/**
 * Where a work tree's git data lives, resolved once by the runner while the tree is still
 * trusted (before any cell ran in it). Every later git call uses these paths; nothing a cell
 * writes into the tree (a new `.git` file, say) can redirect them.
 */
export interface RepoLocation {
  /** Real path of the top of the work tree. */
  top: string;
  /** The git directory of this work tree (for a linked worktree: <common>/worktrees/<name>). */
  gitDir: string;
  commonDir: string;
  objectsDir: string;
  indexFile: string;
  objectFormat: 'sha1' | 'sha256';
  /** `<top>/.git` (file or directory): mounted read-only in every cell. */
  gitEntry: string;
}

/** Finds the repository containing `dir` (the only place git discovers anything). */
export async function discoverRepository(dir: string): Promise<RepoLocation | null> {
  let out: string;
  try {
    // safe.directory: the user named this directory; without it a root runner could not
    // read a repository a cell user owns. Nothing here reads file contents.
    // safe.bareRepository=explicit: a directory an attempt filled with HEAD, config and
    // objects (a "bare repository" inside the checkout) is never discovered as one.
    out = (
      await runGit({ cwd: dir, config: ['safe.directory=*', 'safe.bareRepository=explicit'] }, [
        'rev-parse',
        '--show-toplevel',
        '--absolute-git-dir',
        '--git-common-dir',
        '--show-object-format',
      ])
    ).text;
  } catch {
    return null;
  }
  const [topRaw, gitDirRaw, commonRaw, format] = out.split('\n');
  if (!topRaw || !gitDirRaw || !commonRaw) return null;
  const top = realpathSync(topRaw);
  const gitDir = realpathSync(gitDirRaw);
  const commonDir = realpathSync(isAbsolute(commonRaw) ? commonRaw : resolve(dir, commonRaw));
  refuseCellMadeGitData([join(top, '.git'), gitDir, commonDir, join(commonDir, 'config')]);
  refuseForeignGitDir(top, gitDir);
  return {
    top,
    gitDir,
    commonDir,
    objectsDir: join(commonDir, 'objects'),
    indexFile: join(gitDir, 'index'),
    objectFormat: format === 'sha256' ? 'sha256' : 'sha1',
    gitEntry: join(top, '.git'),
  };
}

/**
 * The git directory must be the work tree's own: `<top>/.git`, or what a `.git` file there
 * names (a linked worktree, a submodule). Anything else (git data found some other way) is
 * refused rather than trusted with its config.
 */
function refuseForeignGitDir(top: string, gitDir: string): void {
  const entry = join(top, '.git');
  const st = lstatSafe(entry);
  let own: string | null = null;
  if (st?.isDirectory()) own = realpathSync(entry);
  else if (st?.isFile()) {
    // Read as a cell-written file would be: no link followed, no FIFO, a gitfile's size at most.
    const text = readRegularPath(entry, 4096);
    const named = Buffer.isBuffer(text) ? /^gitdir: (.+)$/m.exec(text.toString('utf8'))?.[1]?.trim() : undefined;
    if (named) own = existsSync(resolve(top, named)) ? realpathSync(resolve(top, named)) : null;
  }
  if (own !== gitDir) {
    throw new InputError(`${top} has no git data of its own at ${entry} (git found ${gitDir}); open the repository's top folder`);
  }
}

/**
 * Git data owned by the dedicated cell user was made by a cell (a root runner's cells run as
 * that user, and the runner never gives it git data): its config and index are an attacker's,
 * so it is refused, never trusted as the user's repository.
 */
function refuseCellMadeGitData(paths: string[]): void {
  if ((process.getuid?.() ?? 0) !== 0) return;
  const cell = dedicatedCellUser(process.env).uid;
  for (const p of paths) {
    if (lstatSafe(p)?.uid === cell) {
      throw new InputError(
        `${p} belongs to the cell user (uid ${cell}): a cell made this git data, so forge will not trust it as a repository; remove it or use the repository it came from`,
      );
    }
  }
}

/**
 * Refuses a work tree whose git data a cell could write: a git directory (or common
 * directory) inside the tree anywhere but at `.git` (which cells get read-only), or a `.git`
 * that is a symbolic link.
 */
export function assertGitDataOutsideTree(loc: RepoLocation): void {
  const entry = lstatSafe(loc.gitEntry);
  if (entry?.isSymbolicLink()) {
    throw new InputError(
      `${loc.gitEntry} is a symbolic link; cells cannot protect git data behind a link: replace it with the directory or a "gitdir:" file`,
    );
  }
  for (const [what, dir] of [
    ['git directory', loc.gitDir],
    ['common git directory', loc.commonDir],
  ] as const) {
    if (isInside(dir, loc.top) && !isInside(dir, loc.gitEntry)) {
      throw new InputError(
        `the ${what} of ${loc.top} is ${dir}, inside the tree a cell writes: a cell could plant git config the host then runs; move it out (git init --separate-git-dir elsewhere) or to ${loc.gitEntry}`,
      );
    }
  }
}

/** Git on the user's repository (refs, worktrees, branches): its own config, made safe. */
export function repoTarget(loc: Pick<RepoLocation, 'gitDir' | 'top'>, config: string[] = []): GitTarget {
  return { gitDir: loc.gitDir, workTree: loc.top, config };
}

/** Resolves a commit, or null. */
export async function resolveCommit(loc: Pick<RepoLocation, 'gitDir' | 'top'>, ref: string): Promise<string | null> {
  return runGit(repoTarget(loc), ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`]).then(
    (r) => r.text.trim() || null,
    () => null,
  );
}

/**
 * The user's global excludes file (core.excludesFile or the XDG default): honoured when the
 * runner looks at the user's own checkout, so "uncommitted changes" means what `git status`
 * says there.
 */
export function userExcludesFile(env: NodeJS.ProcessEnv = process.env): string | null {
  const home = env.HOME ?? homedir();
  const configured = userGlobalGitConfig('core.excludesFile', env, home);
  const path = configured ? configured.replace(/^~(?=\/|$)/, home) : join(env.XDG_CONFIG_HOME || join(home, '.config'), 'git', 'ignore');
  return isAbsolute(path) && existsSync(path) ? path : null;
}

function lstatSafe(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * The filter drivers the repository's config defines (git-lfs, say). A `.gitattributes` in the
 * checkout (which an applied attempt may have written) chooses which of them git runs on
 * status or stash; the runner's calls there switch every one of them off.
 */
export async function configuredFilters(loc: Pick<RepoLocation, 'gitDir' | 'top'>): Promise<string[]> {
  const out = await runGit(repoTarget(loc), ['config', '--null', '--get-regexp', '^filter\\.'], { okExitCodes: [1] });
  const names = new Set<string>();
  for (const entry of out.text.split('\0')) {
    const key = entry.split('\n')[0] ?? '';
    const m = /^filter\.(.+)\.(?:clean|smudge|process|required)$/.exec(key);
    if (m) names.add(m[1]!);
  }
  return [...names];
}

/** Pure: config overrides under which none of `filters` runs (an empty command is no filter). */
export function filtersOff(filters: string[]): string[] {
  return filters.flatMap((f) => [`filter.${f}.clean=`, `filter.${f}.smudge=`, `filter.${f}.process=`, `filter.${f}.required=false`]);
}
