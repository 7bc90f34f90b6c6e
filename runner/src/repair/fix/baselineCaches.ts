import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { lstatAtOrNull, openDirectoryAt, renameAt } from '../../hostguard/beneath.js';
import { removeTree } from '../../workspace/attemptWorktree.js';
import { CELL_REPORTS_DIR } from '../../workspace/baseIgnoreRules.js';

/*
 * Warm caches from the baseline (issue 29): what the baseline cell compiles, later cells of the
 * same run need not compile again. The baseline cell writes the cache into its own worktree
 * (under CELL_REPORTS_DIR, which no diff holds); before that worktree goes, the runner moves
 * the directory out, unread, into the run's cache directory beside the attempts' worktrees (one
 * rename: no host-side walk of what the cell wrote). Every later cell of the run sees it as a
 * shared dependency with the overlay layer: read-only below, a private upper layer that goes
 * with the cell. So a cell can change only its own view of the cache, never another cell's
 * and never the baseline's; the directory is removed when the run ends, never shared with
 * another run or written back.
 *
 * The baseline runs the base commit's code, which can put anything in the cache: it is that
 * code's word, as its tests are (a repository's own tests decide its verdicts anyway), and
 * what attempts or their cells write never reaches it.
 */

export interface BuildCache {
  /** The variable that points the tool at its cache. */
  variable: string;
  /**
   * Added to every cell that writes or reads the cache: what the cache must not hold. Go keeps
   * test results beside compiled packages and reports a package whose inputs it thinks
   * unchanged as "ok (cached)" without running it; it tracks only files a test opens itself, so
   * a changed script a test runs would pass from the baseline's result (red team).
   */
  append: Record<string, string>;
  /** Its directory name in the baseline's CELL_REPORTS_DIR and in the run's cache directory. */
  name: string;
  /** Where later cells see it. */
  target: string;
  kind: string;
}

/** Go's build cache: content-addressed compiled packages, the standard library's among them. */
export const BUILD_CACHES: readonly BuildCache[] = [
  { variable: 'GOCACHE', append: { GOFLAGS: '-count=1' }, name: 'go-build', target: '/tmp/forge-deps/go-build', kind: 'go-build-cache' },
];

/** The variables of the baseline cell: each cache in its worktree, at the repository's path in the cell. */
export function baselineCacheEnv(repoInCell: string): Record<string, string> {
  return Object.fromEntries(BUILD_CACHES.map((c) => [c.variable, `${repoInCell}/${CELL_REPORTS_DIR}/${c.name}`]));
}

/** What every cell that writes or reads the caches appends to its variables (BuildCache.append). */
export function cacheAppendEnv(caches: readonly BuildCache[] = BUILD_CACHES): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of caches) for (const [k, v] of Object.entries(c.append)) out[k] = out[k] ? `${out[k]} ${v}` : v;
  return out;
}

/**
 * Whether go test output says a package's result was taken from the build cache ("ok  pkg
 * (cached)", also inside -json's Output strings): the tests of that package did not run.
 */
export function reportsCachedTestResult(output: string): boolean {
  return /^ok[ \t]+\S+[ \t]+\(cached\)/m.test(output) || /"Output":"ok(?:[ ]|\\t)[^"\n]*\(cached\)/.test(output);
}

export interface KeptCache extends BuildCache {
  source: string;
}

/**
 * Moves the caches the baseline cell left in its worktree into `into` (made here, on the same
 * filesystem: beside the worktree). Only a real directory is kept; a link, a file or nothing is
 * left where it is and goes with the worktree.
 */
export function keepBaselineCaches(worktree: string, into: string): KeptCache[] {
  const kept: KeptCache[] = [];
  const top = openSync(worktree, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  let reports: number | null = null;
  let target: number | null = null;
  try {
    if (lstatAtOrNull(top, CELL_REPORTS_DIR)?.isDirectory() !== true) return [];
    reports = openDirectoryAt(top, CELL_REPORTS_DIR, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    for (const c of BUILD_CACHES) {
      if (lstatAtOrNull(reports, c.name)?.isDirectory() !== true) continue;
      if (target === null) {
        mkdirSync(into, { mode: 0o755 });
        target = openSync(into, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      }
      renameAt(reports, c.name, target, c.name);
      kept.push({ ...c, source: join(into, c.name) });
    }
    return kept;
  } finally {
    for (const fd of [target, reports, top]) if (fd !== null) closeSync(fd);
  }
}

/**
 * The run's cache directory goes with the run: GNU rm with directory descriptors, as a worktree
 * goes (a cell can leave a tree deeper than PATH_MAX, which a path-based remove cannot take).
 */
export function removeKeptCaches(into: string): void {
  removeTree(into);
}
