import { closeSync, constants } from 'node:fs';
import { openBeneathPath, readOpenedRegular } from '../hostguard/beneath.js';

/*
 * Caches a tool marks as its own are not the change. pytest, ruff, mypy and others write a
 * cache directory with a `.gitignore` of `*` inside it (and often a CACHEDIR.TAG, the
 * Cache Directory Tagging convention): git hides it, but the diff capture reads ignore rules
 * from the base only (a cell must not hide its changes from review), so without this the
 * cache would be captured into the patch and written into the user's tree on Apply.
 *
 * Only a directory that is new as a whole counts (nothing tracked beneath it on the base): a
 * marker in a directory the base has would hide new files beside the user's code. What is
 * left out is named ("generated, not part of the patch"); a tool that writes its cache into a
 * new directory beside code of the change leaves that code out of the patch too, where the
 * review says so and the ground truth, from the patch alone, judges it.
 */

/** The signature line every CACHEDIR.TAG starts with (https://bford.info/cachedir/). */
const CACHEDIR_SIGNATURE = 'Signature: 8a477f597d28d172789f06886806bc55';

/** Most marker files looked at per capture: a tree full of them gets no more host work than this. */
const MAX_MARKERS = 200;

/** Pure: the kind of marker a path's last component is, or null. */
function markerOf(path: string): 'CACHEDIR.TAG' | '.gitignore' | null {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name === 'CACHEDIR.TAG' || name === '.gitignore' ? name : null;
}

/** Pure: whether a marker file's bytes mark its directory as a cache. */
export function marksCache(kind: 'CACHEDIR.TAG' | '.gitignore', content: Buffer): boolean {
  const text = content.toString('utf8');
  if (kind === 'CACHEDIR.TAG') return text.startsWith(CACHEDIR_SIGNATURE);
  const rules = text
    .split('\n')
    .map((l) => l.replace(/\r$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  return rules.length === 1 && rules[0] === '*';
}

/**
 * The untracked directories of `top` that mark themselves as caches (each with a trailing
 * slash, shallowest first, none inside another), from the untracked paths (UTF-8 names).
 * `trackedUnder(dir)` says whether the base tracks anything beneath `dir`.
 */
export async function generatedCaches(
  top: string,
  untracked: readonly string[],
  trackedUnder: (dir: string) => Promise<boolean>,
): Promise<string[]> {
  const dirs: string[] = [];
  let looked = 0;
  for (const path of untracked) {
    const kind = markerOf(path);
    const slash = path.lastIndexOf('/');
    // A marker at the top would mark the whole tree: that is the change itself.
    if (!kind || slash <= 0) continue;
    if (++looked > MAX_MARKERS) break;
    const dir = path.slice(0, slash + 1);
    if (dirs.some((d) => dir.startsWith(d))) continue;
    let fd: number | null = null;
    let content: Buffer | { tooLarge: number } | null = null;
    try {
      fd = openBeneathPath(top, path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW);
      content = readOpenedRegular(fd, 4096);
    } catch {
      content = null;
    } finally {
      if (fd !== null) closeSync(fd);
    }
    if (!Buffer.isBuffer(content) || !marksCache(kind, content)) continue;
    if (await trackedUnder(dir)) continue;
    dirs.push(dir);
  }
  dirs.sort((a, b) => a.length - b.length);
  return dirs.filter((d, i) => !dirs.slice(0, i).some((outer) => d.startsWith(outer)));
}
