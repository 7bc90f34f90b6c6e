// The extension-host suite in desktop VS Code via @vscode/test-cli + @vscode/test-electron
// (`npx vscode-test`), where VS Code can be downloaded. CI has no download; there the same
// suite runs in code-server (test/e2e/extensionHost.test.ts). Build first: npm run build.
import { defineConfig } from '@vscode/test-cli';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default defineConfig({
  files: 'dist-test/extension-host/suite.cjs',
  version: '1.100.3',
  mocha: { ui: 'bdd', timeout: 240000 },
  // A folder open in the window: the suite makes its repository inside it (the extension's
  // views and Review/Apply act on the window's repositories).
  workspaceFolder: mkdtempSync(join(tmpdir(), 'forge-vscode-test-')),
  env: { FORGE_SAMPLES: new URL('./samples', import.meta.url).pathname },
});
