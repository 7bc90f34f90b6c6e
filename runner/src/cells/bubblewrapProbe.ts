import { execa } from 'execa';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';

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
    } catch { /* not here */ }
  }
  return null;
}

export async function probeBubblewrap(env: NodeJS.ProcessEnv = process.env): Promise<BubblewrapProbe> {
  const path = await findOnPath('bwrap', env);
  if (!path) {
    return { usable: false, path: null, version: null, reason: 'bubblewrap (bwrap) is not installed; install it with: apt-get install bubblewrap' };
  }
  const version = await execa(path, ['--version'], { reject: false });
  const trial = await execa(
    path,
    ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--', '/bin/true'],
    { reject: false, timeout: 10_000 },
  );
  const v = version.exitCode === 0 ? String(version.stdout).trim() : null;
  if (trial.exitCode !== 0) {
    const why = String(trial.stderr).trim().split('\n')[0] || `exit ${trial.exitCode}`;
    return { usable: false, path, version: v, reason: `bwrap at ${path} cannot create a sandbox here (${why}); enable unprivileged user namespaces or run as root` };
  }
  return { usable: true, path, version: v, reason: `${v ?? 'bwrap'} at ${path} creates namespaces here` };
}
