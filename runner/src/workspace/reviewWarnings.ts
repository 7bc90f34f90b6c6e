import { basename, extname } from 'node:path';

/** Names of files that are text by nature: shown as binary, their change would hide from review. */
const TEXT_EXTENSIONS = new Set([
  'js',
  'mjs',
  'cjs',
  'jsx',
  'ts',
  'mts',
  'cts',
  'tsx',
  'vue',
  'svelte',
  'py',
  'pyi',
  'pyw',
  'rb',
  'php',
  'pl',
  'pm',
  'lua',
  'r',
  'sh',
  'bash',
  'zsh',
  'fish',
  'ps1',
  'bat',
  'cmd',
  'go',
  'rs',
  'c',
  'h',
  'cc',
  'cpp',
  'cxx',
  'hpp',
  'hh',
  'm',
  'mm',
  'java',
  'kt',
  'kts',
  'scala',
  'groovy',
  'gradle',
  'cs',
  'fs',
  'swift',
  'dart',
  'ex',
  'exs',
  'erl',
  'hs',
  'ml',
  'clj',
  'sql',
  'json',
  'jsonc',
  'json5',
  'yaml',
  'yml',
  'toml',
  'ini',
  'cfg',
  'conf',
  'properties',
  'env',
  'xml',
  'html',
  'htm',
  'css',
  'scss',
  'less',
  'md',
  'rst',
  'txt',
  'mk',
  'cmake',
  'in',
  'lock',
  'proto',
  'graphql',
  'tf',
  'nix',
]);
const TEXT_NAMES = new Set([
  'Makefile',
  'makefile',
  'GNUmakefile',
  'Dockerfile',
  'Containerfile',
  'Gemfile',
  'Rakefile',
  'Procfile',
  'Jenkinsfile',
  '.gitignore',
  '.gitattributes',
  '.npmrc',
  '.editorconfig',
]);

/**
 * Pure: changes the review can only name, not show, although the file is text by its name (a
 * NUL byte makes git call any file binary): what is applied would go unseen. One line each.
 */
export function reviewWarnings(
  files: readonly { path: string; binary: boolean; status: string; mode?: string }[],
  isScript: (path: string) => boolean = () => false,
): string[] {
  return files
    .filter((f) => f.binary && f.status !== 'deleted')
    .slice(0, 2000)
    .flatMap((f) => {
      const name = basename(f.path);
      const why =
        TEXT_NAMES.has(name) || TEXT_EXTENSIONS.has(extname(f.path).slice(1).toLowerCase())
          ? 'a text file by its name'
          : // Dotfiles (.env, .envrc, .gitmodules...) are configuration or scripts.
            name.startsWith('.') && extname(name) === ''
            ? 'a dotfile'
            : isScript(f.path)
              ? 'a script (it starts with #!)'
              : // A shell runs an executable without #! as a script.
                f.mode === '100755'
                ? 'an executable (a shell runs it as a script)'
                : null;
      return why
        ? [
            `${f.path} is shown as binary (it contains a NUL byte) although it is ${why}: its content is applied but not shown; inspect it before applying`,
          ]
        : [];
    });
}
