import { isAbsolute, relative } from 'node:path';

/** Pure: `path` is `dir` or below it (both absolute, already resolved). */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
