import { type Dirent, existsSync, lstatSync, readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, normalize, relative } from 'node:path';
import { z } from 'zod';
import { InputError } from '../../protocol/inputError.js';
import { statDirectoryBeneath } from '../../hostguard/openBeneath.js';
import { readRegularPath } from '../../hostguard/readRegularFile.js';
import { looksLikeSecret } from '../trust/secretNames.js';
import { isInside } from '../../hostguard/pathInside.js';

/** An installed dependency directory every cell of a run sees, without a copy. */
export interface SharedDependencyFound {
  kind: 'node_modules' | 'virtualenv' | 'go-module-cache' | 'maven-repository' | 'gradle-cache' | 'configured';
  /** Host directory. */
  source: string;
  /** Where the cell sees it (inside the repository path for the checkout's own). */
  target: string;
  /** For people: "232 packages", "python 3.11". */
  detail: string;
  layer: 'overlay' | 'read-only';
  /** For a share asked for by name: who asked (a confirmed `.forge/config.json`, or the user's --share). */
  from?: 'repository' | 'you';
}

export interface SharedDependencies {
  deps: SharedDependencyFound[];
  /** Variables the cells need to find them (GOMODCACHE...). */
  env: Record<string, string>;
}

/** The project file: `.forge/config.json` in the repository. */
export const ForgeConfigSchema = z
  .object({
    dependencies: z
      .object({
        share: z
          .array(z.string().min(1))
          .max(32)
          .default([])
          .describe(
            'More directories to share read-only: relative to the repository (its own, e.g. "vendor/bundle") or absolute (a cache outside it, seen at the same path).',
          ),
        exclude: z
          .array(z.string().min(1))
          .max(64)
          .default([])
          .describe(
            'Detected directories not to share, relative to the repository (e.g. "venv"), or a kind: node_modules, virtualenv, go-module-cache, maven-repository, gradle-cache.',
          ),
      })
      .strict()
      .prefault({}),
  })
  .strict();
export type ForgeConfig = z.output<typeof ForgeConfigSchema>;

export const FORGE_CONFIG_FILE = '.forge/config.json';
const CELL_HOME = '/tmp/forge-home';
/** Where cells see the Go module cache. */
export const GO_MODCACHE_TARGET = '/tmp/forge-deps/go-mod';
/** The checkout walk for node_modules of workspace packages stops here. */
const MAX_DEPTH = 4;
const MAX_DIRS = 20_000;
const SKIP_DIRS = new Set(['.git', 'node_modules', '.venv', 'venv', '.forge', 'target', 'dist', 'build', '__pycache__']);

/**
 * A cache the user's own environment names (GOMODCACHE, HOME), at its real path: every cell
 * later opens a shared source without following links, so a link in the user's path is
 * resolved here, where it is the user's word.
 */
const realDir = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
};

const isDir = (p: string) => {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** Packages in a node_modules directory (a scope counts its members; a linked scope is not entered). */
function countPackages(dir: string): number {
  let n = 0;
  for (const e of safeList(dir)) {
    if (e.startsWith('.')) continue;
    n += e.startsWith('@') ? (isDir(join(dir, e)) ? safeList(join(dir, e)).length : 0) : 1;
  }
  return n;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** node_modules of the root and of workspace packages, found by a bounded walk. */
function findNodeModules(checkout: string): string[] {
  const found: string[] = [];
  const queue: [string, number][] = [[checkout, 0]];
  let seen = 0;
  while (queue.length > 0 && seen < MAX_DIRS) {
    const [dir, depth] = queue.shift()!;
    seen++;
    if (isDir(join(dir, 'node_modules'))) found.push(join(dir, 'node_modules'));
    if (depth >= MAX_DEPTH) continue;
    for (const e of safeList(dir)) {
      if (SKIP_DIRS.has(e) || e.startsWith('.')) continue;
      const p = join(dir, e);
      if (isDir(p)) queue.push([p, depth + 1]);
    }
  }
  return found;
}

function pythonOf(venv: string): string {
  const cfg = readRegularPath(join(venv, 'pyvenv.cfg'), 64 * 1024);
  const version = Buffer.isBuffer(cfg) ? /^version(?:_info)?\s*=\s*(\S+)/m.exec(cfg.toString('utf8'))?.[1] : undefined;
  return version ? `python ${version}` : 'python';
}

/**
 * What the checkout has installed, and the toolchain caches its stack reads: each is shared
 * read-only with every cell of the run at the path its tools expect (`checkout`'s own
 * directories appear inside `repoPath`, where the attempt is mounted).
 */
export function detectSharedDeps(
  checkout: string,
  repoPath: string,
  opts: { env: NodeJS.ProcessEnv; share?: readonly ShareRequest[]; exclude?: readonly string[] },
): SharedDependencies {
  const deps: SharedDependencyFound[] = [];
  const env: Record<string, string> = {};
  const inRepo = (abs: string) => join(repoPath, relative(checkout, abs));
  for (const nm of findNodeModules(checkout)) {
    const n = countPackages(nm);
    if (n > 0)
      deps.push({ kind: 'node_modules', source: nm, target: inRepo(nm), detail: `${n} package${n === 1 ? '' : 's'}`, layer: 'overlay' });
  }
  for (const name of ['.venv', 'venv', 'env']) {
    const v = join(checkout, name);
    if (isDir(v) && existsSync(join(v, 'pyvenv.cfg')))
      deps.push({ kind: 'virtualenv', source: v, target: inRepo(v), detail: pythonOf(v), layer: 'overlay' });
  }
  const home = opts.env.HOME;
  if (existsSync(join(checkout, 'go.mod'))) {
    const cache =
      opts.env.GOMODCACHE ||
      (opts.env.GOPATH ? join(opts.env.GOPATH.split(':')[0]!, 'pkg', 'mod') : home ? join(home, 'go', 'pkg', 'mod') : '');
    if (cache && isDir(cache)) {
      // At a path every cell user can reach (a home directory may be closed to it, as /root is).
      deps.push({
        kind: 'go-module-cache',
        source: realDir(cache),
        target: GO_MODCACHE_TARGET,
        detail: `${safeList(cache).filter((e) => !e.startsWith('cache')).length} module path(s)`,
        layer: 'read-only',
      });
      // Modules only from the cache: a cell has no network, and a download would be lost anyway.
      Object.assign(env, { GOMODCACHE: GO_MODCACHE_TARGET, GOPROXY: 'off', GOTOOLCHAIN: 'local' });
    }
  }
  if (
    home &&
    (existsSync(join(checkout, 'pom.xml')) || existsSync(join(checkout, 'build.gradle')) || existsSync(join(checkout, 'build.gradle.kts')))
  ) {
    const m2 = join(home, '.m2', 'repository');
    // Java finds its home in the password database, not $HOME: the cell user's is not the
    // cell home, so Maven and Gradle are told where the shared repository and caches are.
    if (isDir(m2)) {
      deps.push({
        kind: 'maven-repository',
        source: realDir(m2),
        target: join(CELL_HOME, '.m2', 'repository'),
        detail: 'local Maven repository',
        layer: 'overlay',
      });
      env.MAVEN_OPTS = `-Dmaven.repo.local=${join(CELL_HOME, '.m2', 'repository')}`;
    }
    const gradle = join(home, '.gradle', 'caches');
    if (isDir(gradle)) {
      deps.push({
        kind: 'gradle-cache',
        source: realDir(gradle),
        target: join(CELL_HOME, '.gradle', 'caches'),
        detail: 'Gradle caches',
        layer: 'overlay',
      });
      env.GRADLE_USER_HOME = join(CELL_HOME, '.gradle');
    }
    // The distribution ./gradlew runs, downloaded once per machine.
    const wrapper = join(home, '.gradle', 'wrapper', 'dists');
    if (isDir(wrapper))
      deps.push({
        kind: 'gradle-cache',
        source: realDir(wrapper),
        target: join(CELL_HOME, '.gradle', 'wrapper', 'dists'),
        detail: 'Gradle wrapper distributions',
        layer: 'read-only',
      });
  }
  // Exclusions apply to what was detected; a share asked for by name is kept.
  const excluded = new Set(opts.exclude ?? []);
  const kept = deps.filter((d) => !excluded.has(d.kind) && !excluded.has(relative(checkout, d.source)));
  for (const { path: extra, from } of opts.share ?? []) {
    const source = sharedSource(extra, from, checkout);
    if (kept.some((d) => d.source === source)) continue;
    kept.push({
      kind: 'configured',
      source,
      target: isAbsolute(extra) ? source : inRepo(source),
      detail: from === 'you' ? 'from --share' : `from ${FORGE_CONFIG_FILE}`,
      layer: 'overlay',
      from,
    });
  }
  return { deps: dedupeNested(kept), env };
}

/** A directory to share that someone asked for: the user (--share) or a confirmed `.forge/config.json`. */
export interface ShareRequest {
  path: string;
  from: 'repository' | 'you';
}

/**
 * Where a requested share really is: a path inside the checkout is walked down from it one
 * component at a time without following a link (an install step that replaced `gitdata` by a
 * link to `.git` or to a host directory is refused where the link stands); an absolute path
 * must have no link on the way either. Never inside `.git`. Throws InputError naming the entry.
 */
function sharedSource(extra: string, from: ShareRequest['from'], checkout: string): string {
  const what = from === 'you' ? `--share ${extra}` : `${FORGE_CONFIG_FILE}: dependencies.share "${extra}"`;
  if (extra.split('/').includes('.git')) throw new InputError(`${what} is inside .git; share dependency directories only`);
  if (!isAbsolute(extra) && !isInside(join(checkout, extra), checkout))
    throw new InputError(`${what} leaves the repository; give a path inside it or an absolute path`);
  const found = isAbsolute(extra) ? statDirectoryBeneath(normalize(extra), '') : statDirectoryBeneath(checkout, extra);
  if (found.kind === 'absent') throw new InputError(`${what} is not a directory in ${isAbsolute(extra) ? 'the host' : checkout}`);
  if (found.kind === 'refused') throw new InputError(`${what}: ${found.why}; share only real directories (no symbolic link on the way)`);
  // The repository's own request (confirmed by its content, not by what is in the directory
  // today) never brings a repository's git data or a file that holds credentials into a cell.
  if (from === 'repository') {
    const bad = firstSensitiveEntry(found.path);
    if (bad)
      throw new InputError(
        `${what}: ${bad}; a repository's config never shares that into a cell (pass --share ${extra} yourself if you mean it)`,
      );
  }
  return found.path;
}

/** More entries than a shared directory of one's own needs: a repository's share over this is refused, not half-checked. */
const MAX_CHECKED_ENTRIES = 50_000;

/**
 * Why the directory must not be shared on a repository's word: the first entry that is git
 * data (`.git`, a nested repository) or looks like it holds credentials, or that it is too
 * large to check. Walked without following links (a link is not entered, only its name counts).
 */
function firstSensitiveEntry(dir: string): string | null {
  const queue: string[] = [''];
  let seen = 0;
  while (queue.length > 0) {
    const rel = queue.shift()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(join(dir, rel), { withFileTypes: true });
    } catch {
      return `${rel || '.'} cannot be read`;
    }
    for (const e of entries) {
      if (++seen > MAX_CHECKED_ENTRIES) return `it has over ${MAX_CHECKED_ENTRIES} entries, too many to check`;
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === '.git') return `it holds git data (${path})`;
      if (looksLikeSecret(path)) return `it holds ${path}, which looks like it holds credentials`;
      if (e.isDirectory()) queue.push(path);
    }
  }
  return null;
}

/** A directory inside another shared one needs no mount of its own (a package's own node_modules). */
function dedupeNested(deps: SharedDependencyFound[]): SharedDependencyFound[] {
  return deps.filter((d) => !deps.some((o) => o !== d && isInside(d.source, o.source) && d.source !== o.source));
}

/** One line per dependency for progress and the report: "node_modules from the checkout, 232 packages, read-only + overlay". */
export function describeSharedDep(d: SharedDependencyFound, repoPath: string, layers: 'overlay' | 'read-only'): string {
  const where = isInside(d.target, repoPath) ? `${relative(repoPath, d.target) || '.'} from the checkout` : `${d.source} at ${d.target}`;
  const layer = d.layer === 'overlay' && layers === 'overlay' ? 'read-only + overlay' : 'read-only';
  return `${d.kind === 'node_modules' || d.kind === 'virtualenv' ? where : `${d.kind.replace(/-/g, ' ')} ${where}`}, ${d.detail}, ${layer}`;
}

/**
 * Why the cell user cannot read a shared directory, or null. A root runner's cells run as an
 * unprivileged user, who reads a directory only through its "other" permission bits: a
 * cache made private to root (mode 750, as a home's often is) would be shared but unreadable,
 * and its tools would fail as if nothing was installed. Checks the directory and its entries
 * one level down.
 */
export function closedToCellUser(dir: string): string | null {
  const closed = (p: string): string | null => {
    try {
      const st = lstatSync(p);
      return st.isDirectory() && (st.mode & 0o005) !== 0o005 ? `${p} (mode ${(st.mode & 0o777).toString(8)})` : null;
    } catch {
      return null;
    }
  };
  return (
    closed(dir) ??
    safeList(dir)
      .slice(0, 50)
      .map((e) => closed(join(dir, e)))
      .find((c) => c !== null) ??
    null
  );
}
