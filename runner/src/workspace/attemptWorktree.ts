import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { handOverToCellUser } from '../hostguard/cellUser.js';
import { InputError } from '../protocol/inputError.js';
import { commitWorktreeChanges } from './captureWorktreeDiff.js';
import { isInside } from '../hostguard/pathInside.js';
import { discoverRepository, type RepoLocation, repoTarget, resolveCommit } from './repoLocation.js';
import { runGit } from './safeGit.js';
import { copyIncludedFiles, INCLUDED_FILES_NAME } from './copyIncludedFiles.js';
import { ATTEMPTS_DIR_NAME } from '../hostguard/attemptsDirName.js';

export { ATTEMPTS_DIR_NAME };

/** The repository's forge directory in its work tree (bake.json), and the branch prefix. */
export const FORGE_DIR = '.forge';
export const BRANCH_PREFIX = 'forge/attempt/';
export function attemptsDir(loc: Pick<RepoLocation, 'commonDir'>): string {
  return join(loc.commonDir, ATTEMPTS_DIR_NAME);
}
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
  /** Untracked files of the checkout copied in (what the user confirmed or asked for with --include). */
  included: string[];
  /**
   * The worktree's git data, resolved when the runner created it (before any cell ran):
   * every later git call uses this, never the `.git` file in the tree.
   */
  location: RepoLocation;
}

const repositories = new Map<string, RepoLocation>();

/** The user's repository containing `dir` (its own checkout: trusted), or InputError. */
export async function locateRepository(dir: string): Promise<RepoLocation> {
  const abs = resolve(dir);
  const known = repositories.get(abs);
  if (known) return known;
  if (!existsSync(abs)) throw new InputError(`repository ${dir} does not exist; pass --repo with a git repository`);
  const loc = await discoverRepository(abs);
  if (!loc) throw new InputError(`${dir} is not inside a git repository; run "git init" there or pass another --repo`);
  repositories.set(abs, loc);
  return loc;
}

/** Resolves the top of the user's repository, or throws InputError. */
export async function resolveRepo(repo: string): Promise<string> {
  return (await locateRepository(repo)).top;
}

/**
 * `git worktree add` reads every other worktree's admin files: two at once in one repository
 * can meet one half made ("failed to read .../worktrees/<other>/commondir"), and an attempt
 * fails for nothing. The runner's own adds to one repository go one at a time.
 */
const adding = new Map<string, Promise<void>>();
async function oneAtATime<T>(repository: string, work: () => Promise<T>): Promise<T> {
  const before = adding.get(repository) ?? Promise.resolve();
  const run = before.then(work);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  adding.set(repository, settled);
  try {
    return await run;
  } finally {
    if (adding.get(repository) === settled) adding.delete(repository);
  }
}

/**
 * A git worktree at <repo>/.forge/cells/<attemptId> on branch forge/attempt/<attemptId>,
 * checked out at baseRef. The user's working tree, index and stash are not touched; .forge/
 * is excluded through the repository's info/exclude (the user's .gitignore stays as it is).
 * Hooks do not run (a post-checkout hook would run for every attempt). When the runner is
 * root the tree is handed to the unprivileged cell user, who runs every command in it.
 */
export async function createAttemptWorktree(
  repo: string,
  baseRef: string,
  attemptId: string,
  opts: { include?: readonly string[]; onSkipped?: (line: string) => void } = {},
): Promise<AttemptWorktree> {
  if (!ATTEMPT_ID.test(attemptId)) {
    throw new InputError(`attempt id "${attemptId}" must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  const loc = await locateRepository(repo);
  const top = loc.top;
  const baseCommit = await resolveCommit(loc, baseRef);
  if (!baseCommit) throw new InputError(`base ref "${baseRef}" is not a commit in ${top}; pass an existing branch, tag or commit`);
  const dir = attemptsDir(loc);
  assertRealDirectory(dir);
  const path = join(dir, attemptId);
  const branch = BRANCH_PREFIX + attemptId;
  if (existsSync(path)) throw new InputError(`attempt ${attemptId} already has a worktree at ${path}; destroy it first or pick another id`);
  if (await branchExists(loc, branch)) {
    throw new InputError(`branch ${branch} already exists; delete it (git branch -D ${branch}) or pick another attempt id`);
  }
  // Closed to everyone but the runner: a cell may open its own attempt's top to others and
  // leave a setuid file of the cell user there while it runs; nobody else gets that far.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  assertRealDirectory(dir);
  if ((lstatSync(dir).mode & 0o077) !== 0 && lstatSync(dir).uid === (process.geteuid?.() ?? 0)) chmodSync(dir, 0o700);
  await oneAtATime(loc.commonDir, () =>
    runGit(repoTarget(loc), [
      'worktree',
      'add',
      '--quiet',
      '--lock',
      '--reason',
      `${LOCK_OWNER_PREFIX}${process.pid} host=${hostname()}`,
      '-b',
      branch,
      path,
      baseCommit,
    ]),
  );
  const location = await discoverRepository(path);
  if (!location || location.top !== path) throw new Error(`git worktree add did not create a work tree at ${path}`);
  // Untracked files of the checkout the run decided to bring (the user's word: repositoryConsent.ts).
  const { copied: included, skipped } = opts.include?.length ? copyIncludedFiles(top, path, opts.include) : { copied: [], skipped: [] };
  for (const line of skipped) opts.onSkipped?.(`not copied into ${attemptId}: ${line}`);
  // They are the runner's, not the attempt's change: the diff capture leaves them out.
  if (included.length > 0) writeFileSync(join(location.gitDir, INCLUDED_FILES_NAME), included.join('\0'), { mode: 0o644 });
  handOverToCellUser(path);
  // Stat information for every checked-out file (taken now, while the content is the base):
  // later diff captures then hash only what a cell changed.
  await runGit(repoTarget(location), ['update-index', '-q', '--refresh'], { okExitCodes: [1] }).catch(() => undefined);
  return { repo: top, attemptId, path, branch, baseCommit, included, location };
}

/**
 * Removes the worktree; deletes its branch unless keepBranch (the branch then stays for
 * review). The tree is removed by the runner itself, not by `git worktree remove`, which
 * reads the tree's `.git` file and refuses when a cell or tool broke it: a hostile tree must
 * not be able to make cleanup fail.
 */
export async function destroyAttemptWorktree(
  wt: Pick<AttemptWorktree, 'repo' | 'path' | 'branch'>,
  opts: { keepBranch?: boolean } = {},
): Promise<void> {
  const loc = await locateRepository(wt.repo);
  const cells = attemptsDir(loc);
  if (!isInside(resolve(wt.path), cells) || resolve(wt.path) === cells)
    throw new Error(`refusing to remove ${wt.path}: attempt worktrees live under ${cells}`);
  assertRealDirectory(cells);
  await runGit(repoTarget(loc), ['worktree', 'unlock', wt.path]).catch(() => undefined);
  removeTree(wt.path);
  // Never beside a `worktree add` of this runner: prune takes a worktree whose admin
  // directory is made but not yet filled for a stale one (an attempt starting while the
  // baseline's tree goes).
  await oneAtATime(loc.commonDir, () => runGit(repoTarget(loc), ['worktree', 'prune']));
  if (!opts.keepBranch && (await branchExists(loc, wt.branch))) {
    await runGit(repoTarget(loc), ['branch', '-D', '--end-of-options', wt.branch]);
  }
}

/**
 * Removes a tree a cell may have made hard to remove: deeper than PATH_MAX, directories
 * without permissions. GNU rm walks with directory descriptors and never crosses a mount.
 */
export function removeTree(path: string): void {
  if (!existsSync(path) && lstatOrNull(path) === null) return;
  const rm = () => spawnSync('rm', ['-rf', '--one-file-system', '--', path], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  let r = rm();
  if (lstatOrNull(path) !== null) {
    spawnSync('chmod', ['-R', 'u+rwX', '--', path], { stdio: 'ignore' });
    r = rm();
  }
  if (lstatOrNull(path) !== null) throw new Error(`cannot remove ${path}: ${(r.stderr ?? '').trim().split('\n')[0] ?? 'rm failed'}`);
}

/**
 * A directory the runner creates trees in, or writes to, must be a real directory: were it a
 * symbolic link, the runner would create, check out and delete trees wherever it points.
 */
export function assertRealDirectory(dir: string): void {
  const st = lstatOrNull(dir);
  if (st && !st.isDirectory()) {
    throw new InputError(
      `${dir} is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}: forge writes there only when it is a real directory; remove it`,
    );
  }
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * Records the attempt's work as one commit on its branch: exactly the change set its diff
 * shows, taken through the runner's own git view of the tree. Returns the commit.
 */
export async function commitAttempt(
  wt: Pick<AttemptWorktree, 'repo' | 'branch' | 'baseCommit' | 'location'>,
  message: string,
): Promise<string> {
  const { commit, incomplete } = await commitWorktreeChanges({ location: wt.location, base: wt.baseCommit }, message);
  if (incomplete) throw new Error(`the attempt's change could not be recorded completely: ${incomplete}`);
  const loc = await locateRepository(wt.repo);
  await runGit(repoTarget(loc), ['update-ref', '-m', 'forge: attempt', `refs/heads/${wt.branch}`, commit]);
  return commit;
}

/** Marks a worktree as kept for review: gc leaves it alone. */
export async function keepAttemptWorktree(wt: Pick<AttemptWorktree, 'repo' | 'path'>): Promise<void> {
  const target = repoTarget(await locateRepository(wt.repo));
  await runGit(target, ['worktree', 'unlock', wt.path]).catch(() => undefined);
  await runGit(target, ['worktree', 'lock', '--reason', LOCK_KEEP, wt.path]);
}

/** Excludes .forge/ through info/exclude when `dir` is the top of a git repository. */
export async function excludeForgeDirIfRepo(dir: string): Promise<void> {
  const loc = await discoverRepository(resolve(dir));
  if (loc) excludeForgeDir(loc);
}

async function branchExists(loc: RepoLocation, branch: string): Promise<boolean> {
  return (await runGit(repoTarget(loc), ['branch', '--list', '--end-of-options', branch])).text.trim() !== '';
}

function excludeForgeDir(loc: RepoLocation): void {
  const exclude = join(loc.commonDir, 'info', 'exclude');
  const line = `/${FORGE_DIR}/`;
  const current = existsSync(exclude) ? readFileSync(exclude, 'utf8') : '';
  if (current.split('\n').some((l) => l.trim() === line)) return;
  mkdirSync(dirname(exclude), { recursive: true });
  appendFileSync(exclude, `${current === '' || current.endsWith('\n') ? '' : '\n'}# forge-cells attempt worktrees\n${line}\n`);
}

/**
 * The git data of an existing attempt worktree, found from the repository's side (each
 * admin directory names its worktree in `gitdir`), never from the tree a cell wrote.
 */
export async function locateAttemptWorktree(repo: string, path: string): Promise<RepoLocation | null> {
  const loc = await locateRepository(repo);
  const admin = join(loc.commonDir, 'worktrees');
  let names: string[];
  try {
    names = readdirSync(admin);
  } catch {
    return null;
  }
  for (const name of names) {
    let target: string;
    try {
      target = readFileSync(join(admin, name, 'gitdir'), 'utf8').trim();
    } catch {
      continue;
    }
    if (target !== join(path, '.git')) continue;
    const gitDir = join(admin, name);
    return { ...loc, top: path, gitDir, indexFile: join(gitDir, 'index'), gitEntry: join(path, '.git') };
  }
  return null;
}
