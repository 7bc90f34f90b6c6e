import { existsSync, lstatSync, readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { isInside } from '../hostguard/pathInside.js';
import { runnerStateDir } from './cellIdentity.js';

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
const TOOLCHAIN_SECRETS = [
  'credentials',
  'credentials.toml',
  'credentials.json',
  '.credentials',
  'auth.json',
  '.netrc',
  '.npmrc',
  '.pypirc',
];
/**
 * Files inside a re-exposed toolchain home that its tools use for credentials (a `*` is one
 * directory level, listed): cargo's plaintext registry tokens, a node or python install's own
 * npmrc / pip.conf (index URLs with a user and token), rye's and pixi's sources.
 */
const TOOLCHAIN_DEEP_SECRETS: Record<string, string[]> = {
  '.cargo': ['config.toml', 'config'],
  '.nvm': ['.npmrc', 'versions/node/*/etc/npmrc'],
  '.asdf': ['installs/nodejs/*/etc/npmrc', 'installs/python/*/pip.conf', 'installs/maven/*/conf/settings.xml', 'installs/ruby/*/etc/gemrc'],
  '.rbenv': ['versions/*/etc/gemrc'],
  '.volta': ['tools/image/node/*/etc/npmrc'],
  '.pyenv': ['versions/*/pip.conf'],
  '.nodenv': ['versions/*/etc/npmrc'],
  '.rye': ['config.toml'],
  '.pixi': ['config.toml'],
  // conda's channel tokens and pip index credentials; Homebrew's environment file (a GitHub token).
  miniconda3: ['.condarc', 'pip.conf', 'envs/*/pip.conf', 'envs/*/.condarc'],
  anaconda3: ['.condarc', 'pip.conf', 'envs/*/pip.conf', 'envs/*/.condarc'],
  miniforge3: ['.condarc', 'pip.conf', 'envs/*/pip.conf', 'envs/*/.condarc'],
  mambaforge: ['.condarc', 'pip.conf', 'envs/*/pip.conf', 'envs/*/.condarc'],
  linuxbrew: ['.linuxbrew/etc/homebrew/brew.env'],
  // sdkman's candidates/<tool> (what a PATH entry below it puts back): Maven's global settings.
  'candidates/maven': ['*/conf/settings.xml'],
  'share/pipx': ['venvs/*/pip.conf', 'venvs/*/pipx_metadata.json'],
};

/**
 * Toolchain homes under a home whose whole directory a PATH entry below it puts back (version
 * managers keep shims and versions side by side). A PATH entry anywhere else (`~/.config/x/bin`,
 * `~/.pulumi/bin`) puts back only itself: such directories hold tokens beside their binaries.
 */
const TOOLCHAIN_HOMES = new Set([
  '.pyenv',
  '.cargo',
  '.rustup',
  '.nvm',
  '.volta',
  '.bun',
  '.deno',
  '.rbenv',
  '.nodenv',
  '.goenv',
  '.jenv',
  '.sdkman',
  '.asdf',
  '.pixi',
  '.rye',
  '.elan',
  '.ghcup',
  '.opam',
  'go',
  '.go',
  // conda installs and Homebrew on Linux: bin links into their lib, Cellar and pkgs.
  'miniconda3',
  'anaconda3',
  'miniforge3',
  'mambaforge',
  'linuxbrew',
]);

/**
 * Toolchain homes put back only down to this depth below the home: their top holds more than
 * the toolchain (.NET's user certificate store with private keys beside `tools`, opam's
 * plugins with a publishing token beside each switch, sdkman's config beside `candidates`).
 */
const TOOLCHAIN_DEPTH: Record<string, number> = { '.opam': 2, '.sdkman': 3 };

/**
 * Directories under a home that hold far more than a toolchain (XDG data and state, keyrings,
 * the runner's own store): a PATH entry below one puts back only what such tools use.
 */
const CONTAINERS: Record<string, string[]> = {
  // pip --user and pipx: scripts in bin, their packages in lib/python* and share/pipx; the
  // interpreters and tools uv, pnpm and mise keep in share (their bin links lead there).
  '.local': ['bin', 'lib/python*', 'share/pipx', 'share/uv/python', 'share/uv/tools', 'share/pnpm', 'share/mise/installs'],
  // dotnet-install.sh's ~/.dotnet: the SDK, never the user's certificate store (corefx/) beside it.
  '.dotnet': ['dotnet', 'host', 'shared', 'sdk', 'packs', 'templates', 'sdk-manifests', 'metadata', 'tools'],
};

/** Pure: decides the layout from facts about the host. */
export function planSandboxLayout(facts: {
  runnerHome: string | undefined;
  pathEntries: string[];
  existing: (p: string) => boolean;
  isSymlink: (p: string) => boolean;
  sshHostKeys: string[];
  /** The runner's state directory (real path): never put back, whatever PATH says. */
  stateDir?: string;
  /** Where a path really leads (null when it does not exist). */
  realpath?: (p: string) => string | null;
  /** The names in a directory ([] when it cannot be read). */
  list?: (dir: string) => string[];
}): SandboxLayout {
  const masks = ALWAYS_MASKED.filter((p) => facts.existing(p) && !facts.isSymlink(p));
  const home = facts.runnerHome && isAbsolute(facts.runnerHome) && facts.runnerHome !== '/' ? facts.runnerHome : undefined;
  if (home && facts.existing(home) && !masks.some((m) => isInside(home, m))) masks.push(home);
  // What a PATH entry puts back is judged from the most specific hidden place above it: the
  // runner's home under /home is one of them, so ~/.local/bin never puts back all of /home/alice.
  const bases = [...masks, ...(home && masks.some((m) => m !== home && isInside(home, m)) ? [home] : [])];
  // Judged by the path and by where it really leads (bubblewrap binds a link's target): never
  // /, a hidden place, the home or the state directory, nor anything holding one of them.
  const kept = (dir: string) => {
    const real = facts.realpath?.(dir) ?? dir;
    return [dir, real].every(
      (d) =>
        d !== '/' && !bases.some((b) => isInside(b, d)) && !(home && isInside(home, d)) && !(facts.stateDir && isInside(facts.stateDir, d)),
    );
  };
  const reexposed = new Set<string>();
  for (const entry of facts.pathEntries) {
    if (!isAbsolute(entry) || !facts.existing(entry)) continue;
    const base = bases.filter((b) => isInside(entry, b) && entry !== b).sort((a, b) => b.length - a.length)[0];
    if (!base) continue;
    // Re-expose the first directory below the base (e.g. /root/.pyenv for /root/.pyenv/shims):
    // version managers keep their shims and versions side by side there.
    const first = relative(base, entry).split(sep)[0];
    if (!first) continue;
    const within = CONTAINERS[first];
    const depth = TOOLCHAIN_DEPTH[first] ?? 1;
    const parts = relative(base, entry).split(sep);
    const wanted = within
      ? within.flatMap((w) => expandOneLevel(join(base, first), w, facts.list ?? (() => []))).filter((d) => facts.existing(d))
      : TOOLCHAIN_HOMES.has(first)
        ? [join(base, ...parts.slice(0, Math.min(depth, parts.length)))]
        : [entry];
    for (const dir of wanted) {
      // Never a directory holding the home or the state directory: then only the entry itself.
      if (kept(dir)) reexposed.add(dir);
      else if (kept(entry)) reexposed.add(entry);
    }
    for (const sibling of within ? [] : (COMPANIONS[first] ?? [])) {
      const dir = join(base, sibling);
      if (facts.existing(dir) && kept(dir)) reexposed.add(dir);
    }
  }
  // A node install's own npmrc (nvm's versions/node/vX/etc/npmrc) holds registry tokens.
  const binSecrets = facts.pathEntries.filter((e) => e.endsWith('/bin')).map((e) => join(e, '..', 'etc', 'npmrc'));
  const deepSecrets = [...reexposed].flatMap((dir) =>
    Object.entries(TOOLCHAIN_DEEP_SECRETS)
      .filter(([suffix]) => dir.endsWith(`/${suffix}`))
      .flatMap(([, patterns]) => patterns.flatMap((p) => expandOneLevel(dir, p, facts.list ?? (() => [])))),
  );
  const toolchainSecrets = [
    ...[...reexposed].flatMap((dir) => TOOLCHAIN_SECRETS.map((f) => join(dir, f))),
    ...binSecrets.filter((f) => [...reexposed].some((d) => isInside(f, d))),
    ...deepSecrets,
  ];
  const nullMasks = [...SECRET_FILES, ...facts.sshHostKeys, ...toolchainSecrets].filter((p) => facts.existing(p) && !facts.isSymlink(p));
  return { tmpfsMasks: masks, nullMasks, reexposed: [...reexposed].sort() };
}

export { isInside };

/** Pure: `pattern` below `dir`; a part ending in `*` (alone: any name) is one directory level of what `list` gives. */
function expandOneLevel(dir: string, pattern: string, list: (dir: string) => string[]): string[] {
  let paths = [dir];
  for (const part of pattern.split('/')) {
    const prefix = part.endsWith('*') ? part.slice(0, -1) : null;
    paths = paths.flatMap((p) =>
      prefix === null
        ? [join(p, part)]
        : list(p)
            .filter((n) => n.startsWith(prefix))
            .map((n) => join(p, n)),
    );
  }
  return paths;
}

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
    stateDir: realStateDir(runnerStateDir(env)),
    realpath: (p) => {
      try {
        return realpathSync(p);
      } catch {
        return null;
      }
    },
    list: (dir) => {
      try {
        return readdirSync(dir).slice(0, 200);
      } catch {
        return [];
      }
    },
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
