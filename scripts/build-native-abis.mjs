// better-sqlite3 (the runner's native SQLite module) for every Node ABI the VSIX supports
// (SUPPORTED_NODES in scripts/node-dists.mjs). The one in node_modules serves the ABI of the
// Node running this script; each other ABI is compiled from the package's own source with
// node-gyp against that Node's headers (from the npm registry), run by that Node, in a
// scratch copy of the package, so node_modules stays as npm left it. Outputs are cached in
// ~/.cache/forge-cells/ keyed by better-sqlite3 version, ABI, platform and arch: only the
// first packaging pays the compile (a few minutes each on two cores).
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { SUPPORTED_NODES, cacheDir, ensureNodeDist } from './node-dists.mjs';

const root = resolve(import.meta.dirname, '..');
const pkgDir = join(root, 'node_modules', 'better-sqlite3');

function nodeGypScript() {
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp)) return process.env.npm_config_node_gyp;
  // npm bundles node-gyp (it is what built the copy in node_modules at `npm ci`).
  const npmRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
  const script = join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (!existsSync(script)) throw new Error(`node-gyp not found at ${script}`);
  return script;
}

/** Whether an addon loads in this process (npm may have built node_modules' with another Node). */
function loads(file) {
  try {
    createRequire(import.meta.url)(file);
    return true;
  } catch {
    return false;
  }
}

/** execFileSync that keeps the compiler's chatter to itself unless the build fails. */
function run(file, args, options) {
  try {
    return execFileSync(file, args, options);
  } catch (e) {
    if (e.stderr) process.stderr.write(e.stderr);
    if (e.stdout) process.stderr.write(e.stdout);
    throw e;
  }
}

/**
 * SQLite itself (deps/sqlite3.gyp: a static library from the 9 MB amalgamation, most of the
 * compile time) is plain C with no Node in it: when npm built node_modules' copy from source,
 * its sqlite3.a is linked into every other ABI's addon instead of compiling SQLite again, and
 * only src/better_sqlite3.cpp is compiled per ABI. The SQLite headers still come from the
 * package (the copy action stays). Without that archive (a prebuilt download), all is built.
 */
function reuseSqliteArchive(scratch) {
  const archive = join(pkgDir, 'build', 'Release', 'sqlite3.a');
  if (!existsSync(archive)) return false;
  const gypPath = join(scratch, 'deps', 'sqlite3.gyp');
  const gyp = readFileSync(gypPath, 'utf8');
  const from = ["'type': 'static_library',", "'sources': ['<(SHARED_INTERMEDIATE_DIR)/sqlite3/sqlite3.c'],"];
  if (!from.every((f) => gyp.includes(f))) return false; // another layout: build it all
  writeFileSync(
    gypPath,
    gyp
      .replace(from[0], "'type': 'none',")
      .replace(from[1], `'link_settings': { 'libraries': [${JSON.stringify(archive).replaceAll('"', "'")}] },`),
  );
  return true;
}

/**
 * Returns [{ major, modules, file }] for every supported Node: file is a better_sqlite3.node
 * built for that ABI (node_modules' own for this Node's ABI, the cache's for the others).
 */
export function buildNativeAbis({ log = console.log } = {}) {
  const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
  const out = [];
  for (const n of SUPPORTED_NODES) {
    const installed = join(pkgDir, 'build', 'Release', 'better_sqlite3.node');
    if (n.modules === process.versions.modules && loads(installed)) {
      out.push({ major: n.major, modules: n.modules, file: installed });
      continue;
    }
    const cached = join(cacheDir(), `better-sqlite3-${version}-abi${n.modules}-${process.platform}-${process.arch}.node`);
    if (!existsSync(cached)) {
      const node = ensureNodeDist(n.version);
      const scratch = join(cacheDir(), `.build-better-sqlite3-abi${n.modules}-${process.pid}`);
      rmSync(scratch, { recursive: true, force: true });
      mkdirSync(scratch, { recursive: true });
      for (const f of ['package.json', 'binding.gyp', 'src', 'deps', 'lib']) cpSync(join(pkgDir, f), join(scratch, f), { recursive: true });
      reuseSqliteArchive(scratch);
      log(`building better-sqlite3 ${version} for Node ${n.version} (ABI ${n.modules})`);
      const started = Date.now();
      try {
        // Low priority and one job: this machine's second core belongs to whatever else runs.
        run(
          'nice',
          ['-n', '19', node.bin, nodeGypScript(), 'rebuild', '--release', `--nodedir=${node.dir}`, '-j', '1', '--loglevel=warn'],
          { cwd: scratch, stdio: 'pipe', env: { ...process.env, JOBS: '1', npm_config_jobs: '1' }, maxBuffer: 64 << 20 },
        );
        const built = join(scratch, 'build', 'Release', 'better_sqlite3.node');
        const probe = execFileSync(node.bin, ['-e', `require(${JSON.stringify(built)}); console.log(process.versions.modules)`], {
          encoding: 'utf8',
        }).trim();
        if (probe !== n.modules) throw new Error(`built module loads under ABI ${probe}, expected ${n.modules}`);
        mkdirSync(dirname(cached), { recursive: true });
        copyFileSync(built, `${cached}.tmp`);
        renameSync(`${cached}.tmp`, cached);
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
      log(`built in ${Math.round((Date.now() - started) / 1000)} s: ${cached}`);
    }
    out.push({ major: n.major, modules: n.modules, file: cached });
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const abi of buildNativeAbis()) console.log(JSON.stringify(abi));
}
