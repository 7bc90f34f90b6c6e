import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RepoFacts } from './detectStack.js';

/** The I/O side of stack detection: top-level files of a directory. */
export function readRepoFacts(dir: string): RepoFacts {
  const files = new Set(readdirSync(dir).filter((f) => {
    try {
      return statSync(join(dir, f)).isFile();
    } catch {
      return false;
    }
  }));
  return {
    files,
    read: (name) => (files.has(name) ? readFileSync(join(dir, name), 'utf8') : null),
  };
}
