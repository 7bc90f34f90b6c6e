import { existsSync, lstatSync, readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { isInside } from '../workspace/pathInside.js';

/**
 * What a bubblewrap cell sees besides the read-only root: directories hidden behind empty
 * tmpfs mounts, secret files replaced by /dev/null, and toolchains under a hidden home that
 * are put back read-only so `python3`/`node` on PATH still work.
 */
export interface SandboxLayout {
  tmpfsMasks: string[];
  nullMasks: string[];
  reexposed: string[];
}

// /dev needs no mask: bwrap's --dev gives the cell a fresh one (with its own /dev/shm).
const ALWAYS_MASKED = ['/tmp', '/var/tmp', '/run', '/root', '/home'];
const SECRET_FILES = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
/** Toolchain homes that need a sibling to work (rustup proxies in ~/.cargo/bin use ~/.rustup). */
const COMPANIONS: Record<string, string[]> = { '.cargo': ['.rustup'], '.rustup': ['.cargo'] };
/** Credential files that live inside toolchain homes we re-expose. */
const TOOLCHAIN_SECRETS = ['credentials', 'credentials.toml', '.credentials', 'auth.json', '.netrc', '.npmrc', '.pypirc'];

/** Pure: decides the layout from facts about the host. */
export function planSandboxLayout(facts: {
  runnerHome: string | undefined;
  pathEntries: string[];
  existing: (p: string) => boolean;
  isSymlink: (p: string) => boolean;
  sshHostKeys: string[];
}): SandboxLayout {
  const masks = ALWAYS_MASKED.filter((p) => facts.existing(p) && !facts.isSymlink(p));
  const home = facts.runnerHome;
  if (home && isAbsolute(home) && home !== '/' && facts.existing(home) && !masks.some((m) => isInside(home, m))) {
    masks.push(home);
  }
  const reexposed = new Set<string>();
  for (const entry of facts.pathEntries) {
    if (!isAbsolute(entry) || !facts.existing(entry)) continue;
    const mask = masks.find((m) => isInside(entry, m) && entry !== m);
    if (!mask) continue;
    // Re-expose the first directory below the mask (e.g. /root/.pyenv for /root/.pyenv/shims):
    // version managers keep their shims and versions side by side there.
    const first = relative(mask, entry).split(sep)[0];
    if (!first) continue;
    reexposed.add(join(mask, first));
    for (const sibling of COMPANIONS[first] ?? []) {
      if (facts.existing(join(mask, sibling))) reexposed.add(join(mask, sibling));
    }
  }
  const toolchainSecrets = [...reexposed].flatMap((dir) => TOOLCHAIN_SECRETS.map((f) => join(dir, f)));
  const nullMasks = [...SECRET_FILES, ...facts.sshHostKeys, ...toolchainSecrets].filter((p) => facts.existing(p) && !facts.isSymlink(p));
  return { tmpfsMasks: masks, nullMasks, reexposed: [...reexposed].sort() };
}

export { isInside };

/**
 * Pure: the layout with the runner's state directory hidden too (its store holds every run's
 * cell logs, model turns and consents; a state directory outside the always-hidden trees, a
 * `FORGE_STATE_DIR=/srv/forge`, would otherwise be readable in every cell). `stateDir` is the
 * real path; a mask already covering it (or below it) makes it redundant.
 */
export function withStateDirHidden(layout: SandboxLayout, stateDir: string): SandboxLayout {
  if (!isAbsolute(stateDir) || stateDir === '/' || layout.tmpfsMasks.some((m) => isInside(stateDir, m))) return layout;
  return { ...layout, tmpfsMasks: [...layout.tmpfsMasks.filter((m) => !isInside(m, stateDir)), stateDir] };
}

/** The I/O around planSandboxLayout. */
export function probeSandboxLayout(env: NodeJS.ProcessEnv): SandboxLayout {
  let sshHostKeys: string[] = [];
  try {
    sshHostKeys = readdirSync('/etc/ssh')
      .filter((f) => /^ssh_host_.*_key$/.test(f))
      .map((f) => join('/etc/ssh', f));
  } catch {
    sshHostKeys = [];
  }
  return planSandboxLayout({
    runnerHome: env.HOME,
    pathEntries: (env.PATH ?? '').split(':').filter(Boolean),
    existing: existsSync,
    isSymlink: (p) => {
      try {
        return lstatSync(p).isSymbolicLink();
      } catch {
        return false;
      }
    },
    sshHostKeys,
  });
}

/** The state directory by its real path (masks name real paths), or as given when it does not exist yet. */
export function realStateDir(stateDir: string): string {
  try {
    return realpathSync(stateDir);
  } catch {
    return stateDir;
  }
}
