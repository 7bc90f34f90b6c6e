// Bundles the three deliverables. The runner is a standalone Node CLI; the extension is
// loaded by VS Code's extension host (CommonJS, `vscode` provided at runtime); the webview
// runs in the browser sandbox of a webview panel.
import { build } from 'esbuild';
import { chmod, copyFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const common = { bundle: true, sourcemap: true, logLevel: 'warning', legalComments: 'none' };

// dockerode -> docker-modem requires ssh2 (with optional native addons) only for ssh://
// Docker hosts. The runner talks to the local socket; a stub keeps the bundle free of
// native code and says so if anyone points DOCKER_HOST at ssh://.
const stubSsh2 = {
  name: 'stub-ssh2',
  setup(b) {
    b.onResolve({ filter: /^ssh2$/ }, () => ({ path: 'ssh2', namespace: 'forge-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'forge-stub' }, () => ({
      contents:
        "module.exports = { Client: class { constructor() { throw new Error('ssh:// Docker hosts are not supported by forge-runner; use the local socket'); } } };",
      loader: 'js',
    }));
  },
};

// dockerode pulls in @grpc/grpc-js, protobufjs, tar-fs and more (over 1 MB): reading,
// compiling and evaluating them cost every CLI command that merely imports a module able to
// talk to Docker (`cell run --provider host` reaches it through the provider registry). It is
// bundled on its own (dist/runner-chunks/dockerode.cjs) and required on the first `new Docker()`.
const lazyDockerode = {
  name: 'lazy-dockerode',
  setup(b) {
    b.onResolve({ filter: /^dockerode$/ }, () => ({ path: 'dockerode', namespace: 'forge-lazy' }));
    b.onLoad({ filter: /^dockerode$/, namespace: 'forge-lazy' }, () => ({
      contents: [
        "import { createRequire } from 'node:module';",
        // This shim lands in a chunk (dist/runner-chunks/) or, should the graph change, in dist/runner.js.
        "const here = import.meta.url.includes('/runner-chunks/') ? './dockerode.cjs' : './runner-chunks/dockerode.cjs';",
        'let real;',
        'export default function Docker(...args) {',
        '  real ??= createRequire(import.meta.url)(here);',
        '  return new real(...args);',
        '}',
      ].join('\n'),
      loader: 'js',
    }));
  },
};

// The same, for the CommonJS bundle of the `cell` command (a sibling of dockerode.cjs).
const lazyDockerodeCjs = {
  name: 'lazy-dockerode-cjs',
  setup(b) {
    b.onResolve({ filter: /^dockerode$/ }, () => ({ path: 'dockerode', namespace: 'forge-lazy' }));
    b.onLoad({ filter: /^dockerode$/, namespace: 'forge-lazy' }, () => ({
      contents: [
        'let real;',
        'module.exports = function Docker(...args) {',
        "  real ??= require(require('node:path').join(__dirname, 'dockerode.cjs'));",
        '  return new real(...args);',
        '};',
      ].join('\n'),
      loader: 'js',
    }));
  },
};

// execa and its dependencies are a third of the `cell` bundle, and a one-shot host cell with a
// cached sandbox probe never calls them: read and compiled only on first use, from a file of their own.
const lazyExecaCjs = {
  name: 'lazy-execa-cjs',
  setup(b) {
    b.onResolve({ filter: /^execa$/ }, () => ({ path: 'execa', namespace: 'forge-lazy' }));
    b.onLoad({ filter: /^execa$/, namespace: 'forge-lazy' }, () => ({
      contents: "module.exports = require(require('node:path').join(__dirname, 'execa.cjs'));",
      loader: 'js',
    }));
  },
};

// dockerode's BuildKit session (@grpc/grpc-js, @grpc/proto-loader, protobufjs: most of its
// bytes) serves only buildImage with version 2, which the runner never asks for. It is a
// third file, required on the first such call.
const lazyDockerodeSession = {
  name: 'lazy-dockerode-session',
  setup(b) {
    b.onResolve({ filter: /^\.\/session$/ }, (args) =>
      /dockerode[\\/]lib[\\/]docker\.js$/.test(args.importer) ? { path: 'session', namespace: 'forge-lazy' } : undefined,
    );
    b.onLoad({ filter: /^session$/, namespace: 'forge-lazy' }, () => ({
      contents: "module.exports = function withSession(...args) { return require('./dockerode-session.cjs')(...args); };",
      loader: 'js',
    }));
    b.onResolve({ filter: /^\.\/dockerode-session\.cjs$/ }, (args) => ({ path: args.path, external: true }));
  },
};

// zod re-exports every locale as `z.locales` (half its bytes: ~370 KB of the runner's largest
// chunk, parsed at every start). Forge only speaks English: the namespace keeps `en` alone.
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /zod[\\/]v4[\\/](?:classic[\\/]external|core[\\/]index)\.js$/.test(args.importer)
        ? { path: join(dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'forge-zod-en' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'forge-zod-en' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      loader: 'js',
      resolveDir: dirname(args.path),
    }));
  },
};

// The extension's `import('./lazyDeps.js')` becomes a require() of dist/extension-deps.cjs inside
// a promise: a real import() in a CommonJS bundle sends the file through Node's ESM loader (which
// lexes all of extension-deps.cjs for its exports) and makes loaders such as tsx rewrite the
// whole bundle on require. The bundle holds no import() at all (npm run bench, activation).
const lazyExtensionDeps = {
  name: 'lazy-extension-deps',
  setup(b) {
    b.onResolve({ filter: /\/lazyDeps\.js$/ }, () => ({ path: 'lazyDeps', namespace: 'forge-lazy-ext' }));
    b.onLoad({ filter: /.*/, namespace: 'forge-lazy-ext' }, () => ({
      contents: "module.exports = require('./extension-deps.cjs');",
      loader: 'js',
    }));
    b.onResolve({ filter: /^\.\/extension-deps\.cjs$/ }, (args) => ({ path: args.path, external: true }));
  },
};

// Chunk names carry content hashes: drop the previous build's, or the VSIX ships stale ones.
await rm('dist/runner-chunks', { recursive: true, force: true });

await Promise.all([
  build({
    ...common,
    entryPoints: ['extension/src/runner/lazyDeps.ts'],
    outfile: 'dist/extension-deps.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    plugins: [zodEnglishOnly],
  }),
  build({
    ...common,
    stdin: { contents: "module.exports = require('dockerode');", resolveDir: process.cwd(), loader: 'js' },
    outfile: 'dist/runner-chunks/dockerode.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    plugins: [stubSsh2, lazyDockerodeSession],
    sourcemap: false,
  }),
  build({
    ...common,
    stdin: { contents: "module.exports = require('dockerode/lib/session.js');", resolveDir: process.cwd(), loader: 'js' },
    outfile: 'dist/runner-chunks/dockerode-session.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: false,
  }),
  build({
    ...common,
    entryPoints: { runner: 'runner/src/cli/entry.ts' },
    outdir: 'dist',
    // Chunks: `serve --stdio` loads its handshake first and the rest in the background; each
    // CLI command loads its own module and what that imports (runner/src/cli/main.ts).
    splitting: true,
    chunkNames: 'runner-chunks/[name]-[hash]',
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // Bundled CommonJS dependencies call require() for Node built-ins.
    plugins: [stubSsh2, lazyDockerode, zodEnglishOnly],
    // Native addon: loaded from node_modules at run time, never bundled.
    external: ['better-sqlite3'],
    // Half the bytes to read and compile at every start (the extension spawns it on
    // activation); stack traces map back through dist/runner.js.map with --enable-source-maps.
    minify: true,
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __forgeCreateRequire } from 'node:module';\nconst require = __forgeCreateRequire(import.meta.url);",
    },
  }),
  // The `cell` command alone, without splitting and as CommonJS: it shares no chunk, so it holds
  // only the code it reaches, and Node loads it without the ESM loader's per-module and
  // per-built-in work (runner/src/cli/cellMain.ts).
  build({
    ...common,
    stdin: { contents: "module.exports = require('execa');", resolveDir: process.cwd(), loader: 'js' },
    outfile: 'dist/runner-chunks/execa.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    sourcemap: false,
  }),
  build({
    ...common,
    entryPoints: ['runner/src/cli/cellMain.ts'],
    outfile: 'dist/runner-chunks/cell-main.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    plugins: [stubSsh2, lazyDockerodeCjs, lazyExecaCjs, zodEnglishOnly],
    external: ['better-sqlite3'],
    minify: true,
  }),
  build({
    ...common,
    entryPoints: ['extension/src/extension.ts'],
    outfile: 'dist/extension.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
    // Loaded on activation: smaller is faster to parse. The schemas and JSON-RPC transport
    // come from a second bundle, loaded when the runner starts.
    minify: true,
    plugins: [lazyExtensionDeps],
  }),
  // The InstanceCell Durable Objects worker: runs in workerd and on Celld (celld/wrangler.jsonc).
  build({
    ...common,
    entryPoints: ['runner/src/instances/celld/instanceCellWorker.ts'],
    outfile: 'dist/instance-cell-worker.js',
    platform: 'neutral',
    target: 'es2022',
    format: 'esm',
    mainFields: ['module', 'main'],
    external: ['cloudflare:workers', 'cloudflare:sockets', 'node:*', 'node-pty'],
    sourcemap: false,
  }),
  build({
    ...common,
    entryPoints: ['webview/src/main.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    target: 'es2022',
    format: 'esm',
    minify: true,
  }),
  // The extension-host suite (test/extension-host): run by .vscode-test.mjs and, in CI, in code-server.
  ...['index', 'suite'].map((name) =>
    build({
      ...common,
      entryPoints: [`test/extension-host/${name}.ts`],
      outfile: `dist-test/extension-host/${name}.cjs`,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      external: ['vscode', 'mocha'],
      sourcemap: false,
    }),
  ),
]);
await chmod('dist/runner.js', 0o755);
// Icons for the webviews (<vscode-icon> and codicon classes), served from dist/ under the CSP.
for (const f of ['codicon.css', 'codicon.ttf']) await copyFile(`node_modules/@vscode/codicons/dist/${f}`, `dist/${f}`);
// The runner's native SQLite module in node_modules is built for this Node's ABI; the extension
// picks a Node runtime that matches (extension/src/runner/nodeRuntime.ts). The VSIX ships a
// build per supported Node and its staged copy of this file lists them all (scripts/package-vsix.mjs).
await writeFile(
  'dist/native-abi.json',
  JSON.stringify({
    abis: [{ modules: process.versions.modules, node: process.versions.node.split('.')[0] }],
    platform: process.platform,
    arch: process.arch,
  }) + '\n',
);
