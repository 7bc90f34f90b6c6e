/**
 * Which Node.js runs the bundled runner. Its SQLite module (better-sqlite3) is a native
 * addon built for one Node ABI (recorded in dist/native-abi.json when the extension is
 * packaged), so the runner needs a plain Node of that ABI:
 *   1. forge.runner.nodePath, when set (checked, never second-guessed);
 *   2. the extension host itself when it is plain Node (code-server, VS Code Server, remote);
 *   3. `node` on PATH (desktop VS Code, whose extension host is Electron with another ABI).
 * Pure: the caller probes candidates (`node -p process.versions.modules`) and passes results.
 */
export interface NativeAbi {
  modules: string;
  node: string;
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

export function chooseNodeRuntime(want: NativeAbi, candidates: RuntimeCandidate[]): RuntimeChoice {
  const setting = candidates.find((c) => c.source === 'setting');
  if (setting) {
    if (setting.modules === want.modules) return { ok: true, path: setting.path, source: 'setting' };
    const found =
      setting.modules === null
        ? `could not run it (${setting.error ?? 'no answer'})`
        : `it is Node ${setting.version} (ABI ${setting.modules})`;
    return {
      ok: false,
      message: `forge.runner.nodePath is ${setting.path}, but ${found}; the runner needs Node ${want.node} (ABI ${want.modules}). Point the setting at such a node binary.`,
    };
  }
  const usable = candidates.find((c) => c.modules === want.modules);
  if (usable) return { ok: true, path: usable.path, source: usable.source };
  const seen = candidates
    .map((c) => (c.modules === null ? `${c.path}: not runnable` : `${c.path}: Node ${c.version} (ABI ${c.modules})`))
    .join('; ');
  return {
    ok: false,
    message: `no Node.js ${want.node} (ABI ${want.modules}) found for the Forge runner (${seen || 'no node on PATH'}). Install Node ${want.node} and set forge.runner.nodePath to its node binary.`,
  };
}
