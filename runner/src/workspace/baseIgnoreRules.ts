/**
 * Ignore rules for untracked files in a tree a cell wrote. They come from the base commit
 * (the user's committed .gitignore files) and the repository's info/exclude, never from the
 * tree itself: a cell that writes `.gitignore` must not be able to hide what it added.
 *
 * Git reads per-directory .gitignore files from the work tree; here every one of them is
 * rewritten into a single top-level exclude file with the same meaning:
 * - a pattern with no slash but a trailing one matches at any depth below its directory
 *   (`*.o` in a/.gitignore -> `/a/**` + `/*.o`);
 * - a pattern with a slash is relative to its directory (`/x`, `x/y` -> `/a/x`, `/a/x/y`);
 * - deeper files take precedence over shallower ones, and later lines over earlier ones:
 *   in one file, later lines win, so files are emitted shallow first.
 */

export interface IgnoreFile {
  /** Directory of the .gitignore, relative to the top, '' for the top itself. */
  dir: string;
  text: string;
}

/** Pure: the exclude file equivalent to `infoExclude` plus every per-directory file. */
export function translateIgnoreRules(files: readonly IgnoreFile[], infoExclude = ''): string {
  const out: string[] = [];
  for (const line of infoExclude.split('\n')) if (isPattern(line)) out.push(line.replace(/\r$/, ''));
  const ordered = [...files].sort((a, b) => depth(a.dir) - depth(b.dir) || (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0));
  for (const file of ordered) {
    for (const raw of file.text.split('\n')) {
      const line = raw.replace(/\r$/, '');
      if (!isPattern(line)) continue;
      out.push(file.dir === '' ? line : rebase(line, file.dir));
    }
  }
  return out.length === 0 ? '' : out.join('\n') + '\n';
}

function isPattern(line: string): boolean {
  const t = line.replace(/\r$/, '');
  return t.trim() !== '' && !t.startsWith('#');
}

function depth(dir: string): number {
  return dir === '' ? 0 : dir.split('/').length;
}

/** Pure: one pattern of `<dir>/.gitignore` as a pattern of the top-level exclude file. */
export function rebase(line: string, dir: string): string {
  let negate = '';
  let pattern = line;
  if (pattern.startsWith('!')) {
    negate = '!';
    pattern = pattern.slice(1);
  }
  const prefix = escapeGlob(dir);
  if (pattern.startsWith('/')) return `${negate}/${prefix}${pattern}`;
  // Trailing spaces are trimmed by git (unless escaped) and a trailing slash only says
  // "directories": neither counts as a slash that anchors the pattern.
  const body = pattern.replace(/(?<!\\)\s+$/, '').replace(/\/$/, '');
  if (body.includes('/')) return `${negate}/${prefix}/${pattern}`;
  return `${negate}/${prefix}/**/${pattern}`;
}

/** Path components taken literally inside a glob (a directory named `[x]` or `*`). */
export function escapeGlob(path: string): string {
  return path.replace(/[\\*?[\]!#]/g, (c) => `\\${c}`);
}

/**
 * Pure: exclude lines for untracked files the runner itself copied into a worktree (the
 * run's included files): each is the runner's, not the attempt's change, and must never be
 * captured into a patch, whatever the base's ignore rules say. Literal paths, anchored at the top.
 */
export function includedFileRules(paths: readonly string[]): string {
  return paths
    .filter((p) => p !== '' && !p.includes('\n'))
    .map((p) => `/${escapeGlob(p).replace(/ $/, '\\ ')}\n`)
    .join('');
}

/**
 * The directory at the top of a worktree where test runners write the reports the runner asks
 * for (repair/verdicts/cellReports): the runner's, never the attempt's change.
 */
export const CELL_REPORTS_DIR = '.forge-cell-reports';

/** The exclude line that keeps CELL_REPORTS_DIR out of every captured diff. */
export const CELL_REPORTS_RULE = `/${CELL_REPORTS_DIR}/\n`;
