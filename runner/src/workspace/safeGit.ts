import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The only way the runner runs git. Anything a cell or the agent can write (worktree files,
 * `.git` files, config, attributes, symlinks) is hostile to it, so:
 *
 * - git never discovers a repository: GIT_DIR (and GIT_WORK_TREE) are always given, taken
 *   from what the runner resolved before any cell ran, never from a `.git` entry in a tree;
 * - no system or global configuration, no includes from them, no hooks, no fsmonitor, no
 *   pager, credential helper, external diff or signing program (the `-c` overrides below);
 * - work on a tree a cell wrote goes through a runner-made *view* git directory
 *   ({@link withGitView}) whose config is written by the runner (so no filter, textconv or
 *   merge driver exists) and whose info/attributes unsets every attribute that changes
 *   content or its display, overriding any `.gitattributes` in the tree;
 * - pathspecs are literal (a file named `:(exclude)*` is a file name);
 * - every call has an output cap and a deadline, and its whole process group is killed
 *   when either runs out.
 */
export const SAFE_GIT_OVERRIDES: readonly string[] = [
  'core.fsmonitor=false',
  'core.hooksPath=/dev/null',
  'core.pager=cat',
  'core.askPass=',
  'credential.helper=',
  'diff.external=',
  'core.attributesFile=/dev/null',
  'core.untrackedCache=false',
  'core.quotePath=false',
  'core.alternateRefsCommand=',
  'core.gitProxy=',
  'color.ui=false',
  'submodule.recurse=false',
  'diff.ignoreSubmodules=all',
  'status.submoduleSummary=false',
  'fetch.recurseSubmodules=false',
  'protocol.allow=never',
  'gc.auto=0',
  'maintenance.auto=false',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'log.showSignature=false',
  'merge.renormalize=false',
  'advice.detachedHead=false',
];

/** Attributes that run programs or change what content or its diff looks like. */
const NEUTRAL_ATTRIBUTES = [
  'filter',
  'diff',
  'merge',
  'text',
  'eol',
  'crlf',
  'ident',
  'working-tree-encoding',
  'encoding',
  'export-subst',
  'whitespace',
  'conflict-marker-size',
];

/** info/attributes has the highest precedence: this line wins over every in-tree file. */
export const NEUTRAL_ATTRIBUTES_FILE = `* ${NEUTRAL_ATTRIBUTES.map((a) => `!${a}`).join(' ')}\n`;

const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A git call that ran out of time or was cancelled; its process group is already gone. */
export class GitDeadlineError extends Error {
  override readonly name = 'GitDeadlineError';
}

export interface GitTarget {
  /**
   * The git directory, resolved by the runner. Only {@link discoverRepository} leaves it
   * unset, on a directory the user named, before any cell has run there.
   */
  gitDir?: string;
  /** Working directory of git (default: the work tree, else the git directory). */
  cwd?: string;
  workTree?: string;
  /** Where objects are read and written (a view directory borrows the repository's). */
  objectsDir?: string;
  indexFile?: string;
  /** Extra -c overrides after the safe ones (e.g. core.excludesFile for the user's checkout). */
  config?: string[];
}

export interface GitCallOptions {
  input?: string | Buffer;
  /** Stop reading (and kill git) after this many bytes of stdout; the result says truncated. */
  maxBytes?: number;
  /** Stop after this many NUL-terminated records of stdout (streamed listings). */
  maxRecords?: number;
  /** Epoch ms: past it git is killed and GitDeadlineError thrown. */
  deadline?: number;
  signal?: AbortSignal;
  /** Variables for this call only (author identity, ...); never the runner's environment. */
  env?: Record<string, string>;
  /** Exit codes that are not failures (e.g. 1 for `diff --quiet`). */
  okExitCodes?: number[];
  /** Work on a tree a cell wrote runs at the priority of background work, like the cell. */
  lowPriority?: boolean;
}

export interface GitOutput {
  stdout: Buffer;
  text: string;
  truncated: boolean;
  /** Bytes git printed (a lower bound when truncated). */
  bytes: number;
  exitCode: number;
}

export const DEFAULT_GIT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/** The whole environment of a git child: nothing of the runner's own environment but PATH. */
export function safeGitEnvironment(target: GitTarget, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH || FALLBACK_PATH,
    LC_ALL: 'C',
    HOME: '/nonexistent',
    XDG_CONFIG_HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_LITERAL_PATHSPECS: '1',
    GIT_PROTOCOL_FROM_USER: '0',
    ...extra,
  };
  if (target.gitDir !== undefined) env.GIT_DIR = target.gitDir;
  if (target.workTree !== undefined) env.GIT_WORK_TREE = target.workTree;
  if (target.objectsDir !== undefined) env.GIT_OBJECT_DIRECTORY = target.objectsDir;
  if (target.indexFile !== undefined) env.GIT_INDEX_FILE = target.indexFile;
  return env;
}

/** Pure: the argv of one safe git call. */
export function safeGitArgs(target: GitTarget, args: readonly string[]): string[] {
  const overrides = [...SAFE_GIT_OVERRIDES, ...(target.config ?? [])];
  return [...overrides.flatMap((o) => ['-c', o]), ...args];
}

/** Runs one git command against `target` with the safe configuration, bounded. */
export async function runGit(target: GitTarget, args: readonly string[], opts: GitCallOptions = {}): Promise<GitOutput> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const deadline = opts.deadline ?? Date.now() + DEFAULT_GIT_TIMEOUT_MS;
  // Loaded on the first git call, not at import: a `cell run` without a worktree never needs it.
  const { execa } = await import('execa');
  const child = execa('git', safeGitArgs(target, args), {
    cwd: target.cwd ?? target.workTree ?? target.gitDir ?? '/',
    env: safeGitEnvironment(target, opts.env),
    extendEnv: false,
    buffer: false,
    reject: false,
    // Its own process group: a deadline kills git and anything it started.
    detached: true,
    stdin: opts.input === undefined ? 'ignore' : 'pipe',
    stderr: 'pipe',
    stripFinalNewline: false,
  });
  child.stdin?.on('error', () => undefined);
  if (opts.lowPriority && child.pid !== undefined) {
    try {
      setPriority(child.pid, 10);
    } catch {
      /* exited already */
    }
  }
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  let timedOut = false;
  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  const onTimeout = () => {
    timedOut = true;
    killGroup();
  };
  const timer = setTimeout(onTimeout, Math.max(0, deadline - Date.now()));
  const onAbort = () => onTimeout();
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort);
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  let records = 0;
  let truncated = false;
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString();
  });
  try {
    for await (const chunk of child.stdout!) {
      let buf = chunk as Buffer;
      if (opts.maxRecords !== undefined) {
        let cut = -1;
        for (let i = 0; i < buf.length; i++) {
          if (buf[i] === 0 && ++records >= opts.maxRecords) {
            cut = i + 1;
            break;
          }
        }
        if (cut !== -1) {
          buf = buf.subarray(0, cut);
          truncated = true;
        }
      }
      total += buf.length;
      if (kept < maxBytes) {
        const take = Math.min(buf.length, maxBytes - kept);
        chunks.push(buf.subarray(0, take));
        kept += take;
      }
      if (total > maxBytes) truncated = true;
      if (truncated) {
        killGroup();
        break;
      }
    }
    const result = await child;
    if (timedOut)
      throw new GitDeadlineError(
        `git ${args[0] ?? ''} ${opts.signal?.aborted ? 'was cancelled' : 'ran past its deadline'} and was stopped`,
      );
    const exitCode = result.exitCode ?? -1;
    if (!truncated && exitCode !== 0 && !(opts.okExitCodes ?? []).includes(exitCode)) {
      throw new Error(
        `git ${args
          .filter((a) => !a.startsWith('-'))
          .slice(0, 2)
          .join(' ')} failed (${result.exitCode ?? result.signal}): ${firstLine(stderr)}`,
      );
    }
    const stdout = Buffer.concat(chunks);
    return { stdout, text: stdout.toString('utf8'), truncated, bytes: total, exitCode };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    if (child.exitCode === null && child.signalCode === null) killGroup();
  }
}

function firstLine(text: string): string {
  return (text.trim().split('\n')[0] ?? '').slice(0, 300);
}

/** Splits NUL-separated git output into records as bytes: file names need not be UTF-8. */
export function nulRecordBytes(out: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let start = 0;
  for (let i = out.indexOf(0); i !== -1; i = out.indexOf(0, start)) {
    if (i > start) records.push(out.subarray(start, i));
    start = i + 1;
  }
  if (start < out.length) records.push(out.subarray(start));
  return records;
}

/** Splits NUL-separated git output into records (the empty tail dropped). */
export function nulRecords(text: string): string[] {
  return text.split('\0').filter((s) => s !== '');
}

export interface GitViewSpec {
  /** The repository's object directory: objects are read from and written to it. */
  objectsDir: string;
  /** The commit HEAD names (detached). */
  head: string;
  workTree: string;
  /** The index to start from (copied; never written): keeps stat information. */
  indexFrom?: string | null;
  /** sha256 repositories need their object format declared. */
  objectFormat?: 'sha1' | 'sha256';
  /** Ignore rules (gitignore syntax, relative to the top) for untracked files. */
  exclude?: string;
}

export interface GitView extends GitTarget {
  readonly workTree: string;
  readonly indexFile: string;
  /** A file holding the ignore rules, for `ls-files --exclude-from`. */
  readonly excludeFile: string;
  readonly dir: string;
}

/** Pure: the config file of a view directory. */
export function viewConfig(objectFormat: 'sha1' | 'sha256'): string {
  return [
    '[core]',
    `\trepositoryformatversion = ${objectFormat === 'sha256' ? 1 : 0}`,
    '\tfilemode = true',
    '\tbare = false',
    '\tsymlinks = true',
    '\tignorecase = false',
    '\tprecomposeunicode = false',
    '\tlogallrefupdates = false',
    '\tautocrlf = false',
    '\tsafecrlf = false',
    '\ttrustctime = true',
    '\tcheckStat = default',
    '\tfsmonitor = false',
    '\thooksPath = /dev/null',
    ...(objectFormat === 'sha256' ? ['[extensions]', '\tobjectformat = sha256'] : []),
    '',
  ].join('\n');
}

/**
 * A throwaway git directory owned by the runner, for work on a tree a cell wrote: it borrows
 * the repository's objects and copies its index (for stat information), while config,
 * attributes and ignore rules are the runner's. Removed when `work` ends.
 */
export async function withGitView<T>(spec: GitViewSpec, work: (view: GitView) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'forge-gitview-'));
  try {
    for (const d of ['refs/heads', 'refs/tags', 'info']) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, 'HEAD'), `${spec.head}\n`);
    writeFileSync(join(dir, 'config'), viewConfig(spec.objectFormat ?? 'sha1'));
    writeFileSync(join(dir, 'info', 'attributes'), NEUTRAL_ATTRIBUTES_FILE);
    writeFileSync(join(dir, 'info', 'exclude'), spec.exclude ?? '');
    const view: GitView = {
      dir,
      gitDir: dir,
      workTree: spec.workTree,
      objectsDir: spec.objectsDir,
      indexFile: join(dir, 'index'),
      excludeFile: join(dir, 'info', 'exclude'),
      config: ['core.excludesFile=/dev/null'],
    };
    // A copied index is only a stat cache: one naming a path git would never write (absolute,
    // with .. or .git) is not the runner's and could make git read host files; it is dropped.
    let copied = spec.indexFrom ? copyIndex(spec.indexFrom, view.indexFile) : false;
    if (copied && !nulRecords((await runGit(view, ['ls-files', '-z'], { maxBytes: 256 * 1024 * 1024 })).text).every(isSafeIndexPath)) {
      rmSync(view.indexFile, { force: true });
      copied = false;
    }
    if (!copied) await runGit(view, ['read-tree', spec.head]);
    return await work(view);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Pure: a path git itself would accept in an index (relative, no empty, `.`, `..` or `.git` component). */
export function isSafeIndexPath(path: string): boolean {
  if (path === '' || path.startsWith('/') || path.includes('\0')) return false;
  return path.split('/').every((c) => c !== '' && c !== '.' && c !== '..' && c.toLowerCase() !== '.git');
}

/** Copies an index with its timestamp: git's racy-entry check compares file times with it. */
function copyIndex(from: string, to: string): boolean {
  try {
    copyFileSync(from, to);
    const st = statSync(from);
    utimesSync(to, st.atime, st.mtime);
    return true;
  } catch {
    rmSync(to, { force: true });
    return false;
  }
}

/**
 * The two git calls that touch no repository, kept here so every git the runner runs is in
 * this file. Neither reads a repository's config: git runs outside any (cwd /), with the
 * system config off and only PATH and the user's own HOME.
 */
const NO_REPOSITORY_ENV = (env: NodeJS.ProcessEnv) => ({
  PATH: env.PATH ?? '/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CEILING_DIRECTORIES: '/',
});

/** Whether `name` is a valid new branch name by git's own rules (check-ref-format --branch). */
export function isValidBranchName(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const r = spawnSync('git', ['check-ref-format', '--branch', name], {
    cwd: '/',
    stdio: 'ignore',
    env: { ...NO_REPOSITORY_ENV(env), GIT_CONFIG_GLOBAL: '/dev/null' },
  });
  return r.status === 0;
}

/** One key of the user's own global git config (theirs to set, so read), or '' when unset. */
export function userGlobalGitConfig(key: string, env: NodeJS.ProcessEnv, home: string): string {
  try {
    return execFileSync('git', ['config', '--global', '--get', key], {
      cwd: '/',
      encoding: 'utf8',
      env: { ...NO_REPOSITORY_ENV(env), HOME: home, ...(env.XDG_CONFIG_HOME ? { XDG_CONFIG_HOME: env.XDG_CONFIG_HOME } : {}) },
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return '';
  }
}
