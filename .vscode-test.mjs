// Extension-host test suite configuration for @vscode/test-cli. Our machines cannot
// download VS Code, so the real-editor suite runs in code-server (see test/e2e and the
// README); this file keeps the standard layout for developers who have a desktop VS Code.
import { defineConfig } from '@vscode/test-cli';

export default defineConfig({
  files: 'test/extension/**/*.test.js',
  workspaceFolder: './test/fixtures/workspace',
});
