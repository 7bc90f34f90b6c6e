import assert from 'node:assert/strict';
import { build } from 'esbuild';

/**
 * What the extension's first bundle (dist/extension.cjs, read and compiled on activation)
 * pulls in: zod made activation 132 ms once (npm run bench; the target is < 50 ms). The
 * schemas and the JSON-RPC transport belong in dist/extension-deps.cjs, loaded when the runner starts.
 */
describe('extension activation bundle', () => {
  it('holds neither zod nor vscode-jsonrpc, and no import() (required, so no ESM loader on the way)', async () => {
    const r = await build({
      entryPoints: ['extension/src/extension.ts'],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      external: ['vscode'],
      outfile: 'extension.cjs',
      logLevel: 'silent',
      // As scripts/build.mjs does: lazyDeps.ts is the second bundle.
      plugins: [
        {
          name: 'lazy-extension-deps',
          setup(b) {
            b.onResolve({ filter: /\/lazyDeps\.js$/ }, () => ({ path: 'lazyDeps', namespace: 'lazy' }));
            b.onLoad({ filter: /.*/, namespace: 'lazy' }, () => ({
              contents: "module.exports = require('./extension-deps.cjs');",
              loader: 'js',
            }));
            b.onResolve({ filter: /^\.\/extension-deps\.cjs$/ }, (a) => ({ path: a.path, external: true }));
          },
        },
      ],
    });
    const inputs = Object.keys(r.metafile.inputs);
    assert.deepEqual(
      inputs.filter((f) => /node_modules\/(zod|vscode-jsonrpc)\//.test(f)),
      [],
      'imported at activation; import types only, or move the value to a module without zod (e.g. runner/src/protocol/fixLimits.ts)',
    );
    const code = r.outputFiles[0]!.text;
    assert.doesNotMatch(code, /\bimport\(/);
  });
});
