/**
 * Which Node.js runs the bundled runner. Its SQLite module (better-sqlite3) is a native
 * addon built per Node ABI; the VSIX ships one build for each supported Node (20, 22 and
 * 24) and dist/native-abi.json lists them (a dev checkout's lists the build's Node only), so
 * the runner needs a plain Node of one of those ABIs:
 *   1. forge.runner.nodePath, when set (checked, never second-guessed);
 *   2. the extension host itself when it is plain Node (code-server, VS Code Server, remote);
 *   3. `node` on PATH (desktop VS Code, whose extension host is Electron with another ABI).
 * The runner picks the matching build at start (runner/src/store/nativeBinding.ts).
 * Pure: the caller probes candidates (`node -p process.versions.modules`) and passes results.
 */
export interface NativeAbi {
  /** One entry per shipped build: process.versions.modules and the Node major it belongs to. */
  abis: { modules: string; node: string }[];
  platform: string;
  arch: string;
}

export interface RuntimeCandidate {
  source: 'setting' | 'extension-host' | 'path';
  path: string;
  /** process.versions.modules of that binary, or null when it could not be run. */
  modules: string | null;
  version: string | null;
  error?: string;
}

export type RuntimeChoice = { ok: true; path: string; source: RuntimeCandidate['source'] } | { ok: false; message: string };

/** "Node 20", "Node 20 or 22", "Node 20, 22 or 24". */
export function supportedNodes(want: NativeAbi): string {
  const majors = want.abis.map((a) => a.node);
  if (majors.length <= 1) return `Node ${majors[0] ?? '?'}`;
  return `Node ${majors.slice(0, -1).join(', ')} or ${majors[majors.length - 1]}`;
}

export function fitsAbi(want: NativeAbi, modules: string | null): boolean {
  return modules !== null && want.abis.some((a) => a.modules === modules);
}

export function chooseNodeRuntime(want: NativeAbi, candidates: RuntimeCandidate[]): RuntimeChoice {
  const nodes = supportedNodes(want);
  const abis = want.abis.map((a) => a.modules).join(', ');
  const setting = candidates.find((c) => c.source === 'setting');
  if (setting) {
    if (fitsAbi(want, setting.modules)) return { ok: true, path: setting.path, source: 'setting' };
    const found =
      setting.modules === null
        ? `could not run it (${setting.error ?? 'no answer'})`
        : `it is Node ${setting.version} (ABI ${setting.modules})`;
    return {
      ok: false,
      message: `forge.runner.nodePath is ${setting.path}, but ${found}; the runner needs ${nodes} (ABI ${abis}). Point the setting at such a node binary.`,
    };
  }
  const usable = candidates.find((c) => fitsAbi(want, c.modules));
  if (usable) return { ok: true, path: usable.path, source: usable.source };
  const seen = candidates
    .map((c) => (c.modules === null ? `${c.path}: not runnable` : `${c.path}: Node ${c.version} (ABI ${c.modules})`))
    .join('; ');
  return {
    ok: false,
    message: `no Node.js runtime for the Forge runner: it needs ${nodes} (ABI ${abis}); found ${seen || 'no node on PATH'}. Install one of those and put it on PATH or set forge.runner.nodePath to its node binary.`,
  };
}
