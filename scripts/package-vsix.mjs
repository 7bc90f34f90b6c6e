// `npm run package`: builds, stages exactly what the extension needs (the bundles, the
// runner, the webview, codicons, and the runner's native SQLite module, one build per
// supported Node ABI, with its two pure-JS helpers), and packs it with @vscode/vsce.
// Output: forge-cells-<version>.vsix. `--stage-only` stops before vsce (.tmp/vsix-stage/).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildNativeAbis } from './build-native-abis.mjs';

const root = resolve(import.meta.dirname, '..');
const stage = join(root, '.tmp', 'vsix-stage');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const out = join(root, `${pkg.name}-${pkg.version}.vsix`);

execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });

const copy = (from, to = from) => cpSync(join(root, from), join(stage, to), { recursive: true });
for (const f of ['runner.js', 'extension.cjs', 'extension-deps.cjs', 'webview.js', 'native-abi.json', 'codicon.css', 'codicon.ttf'])
  copy(join('dist', f));
cpSync(join(root, 'dist', 'runner-chunks'), join(stage, 'dist', 'runner-chunks'), { recursive: true, filter: (f) => !f.endsWith('.map') });
copy('media');
copy('README.md');
// The Instances view's empty state opens it (forge.openInstancesGuide).
copy('docs/instances.md');
copy('LICENSE');
// The runner loads better-sqlite3 at run time (a native addon cannot be bundled).
const sqlite = 'node_modules/better-sqlite3';
for (const f of ['package.json', 'LICENSE', 'lib']) copy(join(sqlite, f));
// One build per supported Node (20, 22, 24; scripts/build-native-abis.mjs, cached after the
// first): build/abi-<modules>/better_sqlite3.node, listed in build/forge-abis.json, which the
// runner reads to pick its own (runner/src/store/nativeBinding.ts) and the extension's
// dist/native-abi.json to pick a Node (extension/src/runner/nodeRuntime.ts).
const abis = buildNativeAbis();
for (const a of abis) cpSync(a.file, join(stage, sqlite, 'build', `abi-${a.modules}`, 'better_sqlite3.node'));
writeFileSync(
  join(stage, sqlite, 'build', 'forge-abis.json'),
  JSON.stringify(
    { abis: abis.map((a) => ({ modules: a.modules, node: a.major, file: `build/abi-${a.modules}/better_sqlite3.node` })) },
    null,
    2,
  ) + '\n',
);
writeFileSync(
  join(stage, 'dist', 'native-abi.json'),
  JSON.stringify({ abis: abis.map((a) => ({ modules: a.modules, node: a.major })), platform: process.platform, arch: process.arch }) + '\n',
);
for (const dep of ['bindings', 'file-uri-to-path']) copy(join('node_modules', dep));
// Its install-time helper (prebuild-install) is not shipped: the binary is already built.
const sqlitePkgPath = join(stage, sqlite, 'package.json');
const sqlitePkg = JSON.parse(readFileSync(sqlitePkgPath, 'utf8'));
delete sqlitePkg.dependencies['prebuild-install'];
delete sqlitePkg.scripts;
writeFileSync(sqlitePkgPath, JSON.stringify(sqlitePkg, null, 2) + '\n');

// The published manifest: no scripts or dev tooling; the one runtime module (and its helpers) travel in node_modules.
const { devDependencies: _d, scripts: _s, allowScripts: _a, mocha: _m, dependencies: _deps, ...manifest } = pkg;
writeFileSync(
  join(stage, 'package.json'),
  JSON.stringify({ ...manifest, private: undefined, dependencies: { 'better-sqlite3': pkg.dependencies['better-sqlite3'] } }, null, 2) +
    '\n',
);

if (process.argv.includes('--stage-only')) {
  console.log(`staged ${stage}`);
  process.exit(0);
}
execFileSync(
  process.execPath,
  [join(root, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--allow-missing-repository', '--skip-license', '--out', out],
  { cwd: stage, stdio: 'inherit' },
);
console.log(`packaged ${out}`);
