// Lint: the architecture's layer rules as machine-checked guardrails, plus a few high-value
// checks. `npm run lint` runs it (and CI runs that before the tests).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Layer rules (no-restricted-imports), one block per layer; test/lint/layerRules.unit.test.ts proves each fires. */
export const layerRules = [
  {
    name: 'forge/layers/runner-no-vscode',
    files: ['runner/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'The runner is a plain Node process: it never imports the VS Code API.' }],
        },
      ],
    },
  },
  {
    name: 'forge/layers/cells-no-repair',
    files: ['runner/src/cells/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'The runner is a plain Node process: it never imports the VS Code API.' }],
          patterns: [
            {
              regex: '^\\.{1,2}/(?:.*/)?repair(?:/|$)',
              message: 'Cells run commands; they never import the repair layer (runner/src/repair).',
            },
          ],
        },
      ],
    },
  },
  {
    // The host's own defences sit below cells/ and workspace/: they take nothing from above.
    name: 'forge/layers/hostguard-protocol-only',
    files: ['runner/src/hostguard/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'The runner is a plain Node process: it never imports the VS Code API.' }],
          patterns: [
            {
              regex: '^\\.{1,2}/(?:\\.\\./)*(?!protocol/|hostguard/)[^./][^/]*/',
              message: 'hostguard is the bottom layer of the runner: it imports only runner/src/protocol (and itself).',
            },
          ],
        },
      ],
    },
  },
  {
    // The store is the bottom of the persistence side: rows in, rows out, no other layer's code.
    name: 'forge/layers/store-imports-nothing',
    files: ['runner/src/store/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'The runner is a plain Node process: it never imports the VS Code API.' }],
          patterns: [
            {
              regex: '^\\.{1,2}/(?:\\.\\./)*(?!store/)[^./][^/]*/',
              message: 'The store imports no other layer of the runner (a row type it keeps is declared in store/).',
            },
          ],
        },
      ],
    },
  },
  {
    // Descriptor-relative paths are spelled in one place (hostguard/beneath.ts), where each step is O_NOFOLLOW.
    name: 'forge/layers/descriptor-paths-in-hostguard',
    files: ['runner/src/**/*.ts'],
    ignores: ['runner/src/hostguard/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Literal[value=/\\/proc\\/self\\/fd/], TemplateElement[value.raw=/\\/proc\\/self\\/fd/]',
          message:
            'Open names beneath a directory descriptor through runner/src/hostguard/beneath.ts (openAt, lstatAt, readRegularAt, replaceAt...), not a /proc/self/fd path of your own.',
        },
      ],
    },
  },
  {
    name: 'forge/layers/extension-protocol-only',
    files: ['extension/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(?:^|/)runner/src/(?!protocol/)',
              message: 'The extension talks to the runner over JSON-RPC: import only runner/src/protocol.',
            },
          ],
        },
      ],
    },
  },
  {
    name: 'forge/layers/webview-protocol-only',
    files: ['webview/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'The webview runs in a browser frame: it has no VS Code API module.' }],
          patterns: [
            {
              regex: '(?:^|/)runner/src/(?!protocol/)',
              message: 'The webview imports only runner/src/protocol from the runner.',
            },
            {
              regex: '(?:^|/)extension/src(?:/|$)',
              message: 'The webview talks to the extension by postMessage; it does not import extension code.',
            },
          ],
        },
      ],
    },
  },
];

export default tseslint.config(
  {
    name: 'forge/ignores',
    ignores: [
      'dist/**',
      'dist-test/**',
      'node_modules/**',
      'test/corpus/*/repo/**',
      'samples/**',
      'celld/**',
      'schemas/**',
      '.forge/**',
      '.tmp/**',
      'test-results/**',
    ],
  },
  {
    name: 'forge/typescript',
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // `_name` marks a deliberately unused parameter or a destructured-away field.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
          caughtErrors: 'none',
        },
      ],
      // Off on purpose: `let x = default` before a try/if is the house style, and errors
      // re-thrown as InputError deliberately drop the internal cause from the user-facing
      // message. no-control-regex stays on: sanitizers disable it line by line.
      'no-regex-spaces': 'off',
      'no-useless-assignment': 'off',
      'preserve-caught-error': 'off',
    },
  },
  {
    name: 'forge/javascript',
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly' } },
    rules: {
      'no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_', ignoreRestSiblings: true, caughtErrors: 'none' }],
    },
  },
  ...layerRules,
);
