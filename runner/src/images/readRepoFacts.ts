import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readRegularFile } from '../hostguard/readRegularFile.js';
import type { RepoFacts } from './detectStack.js';

/**
 * The I/O side of stack detection: the top-level regular files of a directory. Symbolic links
 * do not count (a cell could point `package.json` or `.npmrc` at a host file), and files are
 * read without following links.
 */
export function readRepoFacts(dir: string): RepoFacts {
  const files = new Set(
    readdirSync(dir).filter((f) => {
      try {
        return lstatSync(join(dir, f)).isFile();
      } catch {
        return false;
      }
    }),
  );
  const venv =
    ['.venv', 'venv'].find((v) => {
      try {
        return (
          lstatSync(join(dir, v)).isDirectory() &&
          lstatSync(join(dir, v, 'pyvenv.cfg')).isFile() &&
          lstatSync(join(dir, v, 'bin', 'python')) !== null
        );
      } catch {
        return false;
      }
    }) ?? null;
  return {
    files,
    venv,
    read: (name) => (files.has(name) ? (readRegularFile(dir, name)?.toString('utf8') ?? null) : null),
  };
}
