/**
 * Which build of better-sqlite3 (a native addon, one build per Node ABI) the runner loads.
 * The VSIX ships one for each supported Node and lists them in
 * node_modules/better-sqlite3/build/forge-abis.json (scripts/package-vsix.mjs); the runner
 * takes the one for its own process.versions.modules, and on any other Node refuses to
 * start with one line naming the supported versions. Without that file (a dev checkout,
 * where npm built the module for the Node at hand) better-sqlite3 loads its default build.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface ShippedAbis {
  /** file: relative to the better-sqlite3 package directory. */
  abis: { modules: string; node: string; file: string }[];
}

export type BindingChoice = { ok: true; file: string | null } | { ok: false; message: string };

/** Pure: the shipped list (null: not a packaged runner) and this process's ABI and version. */
export function chooseNativeBinding(shipped: ShippedAbis | null, modules: string, nodeVersion: string): BindingChoice {
  if (!shipped) return { ok: true, file: null };
  const hit = shipped.abis.find((a) => a.modules === modules);
  if (hit) return { ok: true, file: hit.file };
  const majors = shipped.abis.map((a) => a.node);
  const nodes = majors.length <= 1 ? `Node ${majors[0] ?? '?'}` : `Node ${majors.slice(0, -1).join(', ')} or ${majors[majors.length - 1]}`;
  return {
    ok: false,
    message: `forge-runner: this is Node ${nodeVersion} (ABI ${modules}), but its SQLite module is shipped for ${nodes} (ABI ${shipped.abis.map((a) => a.modules).join(', ')}); run it with one of those (in VS Code: forge.runner.nodePath).`,
  };
}

let resolved: BindingChoice | undefined;
let packageDir = '';

function resolveBinding(): BindingChoice {
  if (resolved) return resolved;
  try {
    packageDir = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  } catch {
    // Not installed beside this runner: importing better-sqlite3 will say so where it is used.
    resolved = { ok: true, file: null };
    return resolved;
  }
  const listing = join(packageDir, 'build', 'forge-abis.json');
  const shipped = existsSync(listing) ? (JSON.parse(readFileSync(listing, 'utf8')) as ShippedAbis) : null;
  resolved = chooseNativeBinding(shipped, process.versions.modules, process.versions.node);
  return resolved;
}

/** The problem with this Node, in one line, or null when a build fits. */
export function nativeAbiProblem(): string | null {
  const choice = resolveBinding();
  return choice.ok ? null : choice.message;
}

/** Options for `new Database(...)`: the shipped build for this ABI, or {} for the default. */
export function nativeBindingOptions(): { nativeBinding?: string } {
  const choice = resolveBinding();
  if (!choice.ok) throw new Error(choice.message);
  return choice.file ? { nativeBinding: join(packageDir, choice.file) } : {};
}
