// Bundles the three deliverables. The runner is a standalone Node CLI; the extension is
// loaded by VS Code's extension host (CommonJS, `vscode` provided at runtime); the webview
// runs in the browser sandbox of a webview panel.
import { build } from 'esbuild';
import { chmod } from 'node:fs/promises';

const common = { bundle: true, sourcemap: true, logLevel: 'warning', legalComments: 'none' };

await Promise.all([
  build({
    ...common,
    entryPoints: ['runner/src/cli/main.ts'],
    outfile: 'dist/runner.js',
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // Bundled CommonJS dependencies call require() for Node built-ins.
    banner: { js: "#!/usr/bin/env node\nimport { createRequire as __forgeCreateRequire } from 'node:module';\nconst require = __forgeCreateRequire(import.meta.url);" },
  }),
  build({
    ...common,
    entryPoints: ['extension/src/extension.ts'],
    outfile: 'dist/extension.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
  }),
  build({
    ...common,
    entryPoints: ['webview/src/main.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    target: 'es2022',
    format: 'esm',
  }),
]);
await chmod('dist/runner.js', 0o755);
