import { execa } from 'execa';

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
export async function probeBubblewrap(env: NodeJS.ProcessEnv = process.env): Promise<BubblewrapProbe> {
  const which = await execa('sh', ['-c', 'command -v bwrap'], { reject: false, env: { PATH: env.PATH ?? '' }, extendEnv: false });
  const path = which.exitCode === 0 ? String(which.stdout).trim() : null;
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
