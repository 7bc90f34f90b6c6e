import { closeSync, constants, fstatSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';

export interface BubblewrapProbe {
  usable: boolean;
  path: string | null;
  version: string | null;
  reason: string;
}

/**
 * Finds bwrap and checks it can really build the sandbox cells use: installed is not enough
 * (user namespaces may be disabled, or a container may forbid mounts).
 */
/** Absolute path of an executable on env.PATH, or null. */
export async function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir.startsWith('/')) continue;
    const candidate = `${dir}/${name}`;
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* not here */
    }
  }
  return null;
}

export async function probeBubblewrap(env: NodeJS.ProcessEnv = process.env, cacheDir?: string): Promise<BubblewrapProbe> {
  const path = await findOnPath('bwrap', env);
  if (!path) {
    return {
      usable: false,
      path: null,
      version: null,
      reason: 'bubblewrap (bwrap) is not installed; install it with: apt-get install bubblewrap',
    };
  }
  const key = cacheDir ? probeKey(path) : null;
  const cached = key && cacheDir ? readCachedProbe(cacheDir, key, path) : null;
  if (cached) return cached;
  // Two processes, side by side: a one-shot `cell run` waits for this probe. execa is loaded
  // here, not at the top: a cached probe (the usual case) never evaluates it.
  const { execa } = await import('execa');
  const [version, trial] = await Promise.all([
    execa(path, ['--version'], { reject: false }),
    execa(
      path,
      [
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--tmpfs',
        '/tmp',
        '--unshare-all',
        '--die-with-parent',
        '--new-session',
        '--cap-drop',
        'ALL',
        '--',
        '/bin/true',
      ],
      { reject: false, timeout: 10_000 },
    ),
  ]);
  const v = version.exitCode === 0 ? String(version.stdout).trim() : null;
  if (trial.exitCode !== 0) {
    const why = String(trial.stderr).trim().split('\n')[0] || `exit ${trial.exitCode}`;
    return {
      usable: false,
      path,
      version: v,
      reason: `bwrap at ${path} cannot create a sandbox here (${why}); enable unprivileged user namespaces or run as root`,
    };
  }
  const probe: BubblewrapProbe = { usable: true, path, version: v, reason: `${v ?? 'bwrap'} at ${path} creates namespaces here` };
  if (key && cacheDir) writeCachedProbe(cacheDir, key, probe);
  return probe;
}

/** How long a successful probe is trusted (a failing one is never kept: it is retried each time). */
const PROBE_TTL_MS = 60 * 60 * 1000;
const PROBE_CACHE = 'bwrap-probe.json';

/**
 * What a probe result depends on: the bwrap binary, the kernel, the user. Only "usable" and
 * the version are kept; the binary run is always the one found on PATH, so a stale or forged
 * "usable" can only make a cell fail with bwrap's own error, never run it with less isolation.
 */
function probeKey(path: string): string | null {
  try {
    const st = statSync(path);
    return JSON.stringify([path, st.size, st.mtimeMs, st.ino, release(), process.getuid?.() ?? -1]);
  } catch {
    return null;
  }
}

/**
 * The cached answer for the bwrap at `path` (found on PATH now, never taken from the file),
 * or null. The file must be the runner's own: a regular file it owns, mode 0600 (a cell that
 * could write the state directory must not be able to choose the answer).
 */
function readCachedProbe(dir: string, key: string, path: string): BubblewrapProbe | null {
  let fd: number | null = null;
  try {
    fd = openSync(join(dir, PROBE_CACHE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== (process.getuid?.() ?? -1) || (st.mode & 0o777) !== 0o600 || st.size > 4096) return null;
    const saved = JSON.parse(readFileSync(fd, 'utf8')) as { key?: unknown; at?: unknown; version?: unknown };
    if (saved.key !== key || typeof saved.at !== 'number' || Date.now() - saved.at > PROBE_TTL_MS || saved.at > Date.now()) return null;
    const v = typeof saved.version === 'string' ? saved.version.slice(0, 200) : null;
    return { usable: true, path, version: v, reason: `${v ?? 'bwrap'} at ${path} creates namespaces here` };
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

function writeCachedProbe(dir: string, key: string, probe: BubblewrapProbe): void {
  try {
    const tmp = join(dir, `${PROBE_CACHE}.${process.pid}`);
    rmSync(tmp, { force: true });
    writeFileSync(tmp, JSON.stringify({ key, at: Date.now(), version: probe.version }), { mode: 0o600, flag: 'wx' });
    renameSync(tmp, join(dir, PROBE_CACHE));
  } catch {
    // Only a cache: the next cell probes again.
  }
}
