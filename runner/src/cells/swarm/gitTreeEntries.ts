import { isSafeIndexPath, runGit, type GitTarget } from '../../workspace/safeGit.js';
import type { TarEntry } from './tarArchive.js';
import { InputError } from '../../protocol/inputError.js';

/**
 * A commit's tree as archive entries, read from git objects alone: `ls-tree` for the names
 * and `cat-file --batch` for the blobs. No attribute is ever looked up, so nothing the tree
 * says about itself (`export-ignore`, `export-subst` in any `.gitattributes`, macros, the
 * repository's info/attributes) leaves a file out or rewrites it, as `git archive` would:
 * every file is the bytes git stores, which is what diffs, patches and the worktree's
 * change set are made of.
 */

/** ls-tree and cat-file as git archive wrote them with its default umask (002). */
const DIR_MODE = 0o775;
const FILE_MODE = 0o664;
const EXEC_MODE = 0o775;

interface TreeRecord {
  mode: string;
  type: string;
  oid: string;
  path: string;
}

/** Pure: the records of `ls-tree -r -z` output. */
export function parseLsTree(out: Buffer): TreeRecord[] {
  const records: TreeRecord[] = [];
  let at = 0;
  while (at < out.length) {
    const end = out.indexOf(0, at);
    const rec = out.subarray(at, end === -1 ? out.length : end);
    at = end === -1 ? out.length : end + 1;
    const tab = rec.indexOf(0x09);
    if (tab === -1) continue;
    const [mode = '', type = '', oid = ''] = rec.subarray(0, tab).toString('latin1').split(' ');
    const raw = rec.subarray(tab + 1);
    const path = raw.toString('utf8');
    // A name that is not UTF-8 would be another name in the archive: two such names collapse
    // into one (a link and a directory of the same name, the second written through the first).
    if (!Buffer.from(path, 'utf8').equals(raw))
      throw new InputError(
        `the tree has a path that is not valid UTF-8 (${JSON.stringify(path)}); swarm cells carry names as text: rename it, or use --provider docker`,
      );
    records.push({ mode, type, oid, path });
  }
  return records;
}

/** Pure: blobs by id from `cat-file --batch` output (throws on an object it could not give). */
export function parseCatFileBatch(out: Buffer): Map<string, Buffer> {
  const blobs = new Map<string, Buffer>();
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(0x0a, at);
    if (nl === -1) throw new Error('git cat-file: truncated answer');
    const [oid = '', type = '', size = ''] = out.subarray(at, nl).toString('latin1').split(' ');
    if (type === 'missing' || !/^\d+$/.test(size)) throw new Error(`git cat-file: object ${oid} is ${type || 'unreadable'}`);
    const start = nl + 1;
    const end = start + Number(size);
    if (end > out.length) throw new Error(`git cat-file: object ${oid} is cut short`);
    blobs.set(oid, out.subarray(start, end));
    at = end + 1;
  }
  return blobs;
}

/**
 * The tree of `commit` as entries with paths relative to its top (directories first, then
 * what is in them); `only` keeps just those paths (and their directories). A submodule is an
 * empty directory, as in `git archive`. Names git itself would refuse (`..`, `.git`) are left
 * out. Throws when the files are over `maxBytes`.
 */
export async function gitTreeEntries(
  target: GitTarget,
  commit: string,
  opts: { only?: ReadonlySet<string>; maxBytes: number; uid: number; gid: number; mtime: number },
): Promise<TarEntry[]> {
  const listing = await runGit(target, ['ls-tree', '-r', '-z', '--full-tree', `${commit}^{tree}`], { maxBytes: 256 * 1024 * 1024 });
  if (listing.truncated)
    throw new Error(`the tree of ${commit.slice(0, 12)} lists more than 256 MiB of names; swarm cells cannot carry it`);
  const all = parseLsTree(listing.stdout);
  // Judged on the whole tree, not only the paths sent: the task's tree is the whole base.
  refuseUnsafeTree(all);
  const records = all.filter((r) => isSafeIndexPath(r.path) && (!opts.only || opts.only.has(r.path)));
  const wanted = [...new Set(records.filter((r) => r.type === 'blob').map((r) => r.oid))];
  let blobs = new Map<string, Buffer>();
  if (wanted.length > 0) {
    const out = await runGit(target, ['cat-file', '--batch'], { input: wanted.map((o) => `${o}\n`).join(''), maxBytes: opts.maxBytes });
    if (out.truncated) throw new Error(`the tree of ${commit.slice(0, 12)} is over ${opts.maxBytes} bytes; swarm cells cannot carry it`);
    blobs = parseCatFileBatch(out.stdout);
  }
  const owner = { uid: opts.uid, gid: opts.gid, mtime: opts.mtime };
  const dirs = new Set<string>();
  const entries: TarEntry[] = [];
  const parents = (path: string) => {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (dirs.has(dir)) continue;
      dirs.add(dir);
      entries.push({ name: dir, type: 'dir', mode: DIR_MODE, ...owner });
    }
  };
  for (const r of records) {
    parents(r.path);
    if (r.type === 'commit') {
      if (!dirs.has(r.path)) entries.push({ name: r.path, type: 'dir', mode: DIR_MODE, ...owner });
      dirs.add(r.path);
      continue;
    }
    if (r.type !== 'blob') continue;
    const data = blobs.get(r.oid);
    if (!data) throw new Error(`git cat-file did not give ${r.oid} (${r.path})`);
    if (r.mode === '120000') entries.push({ name: r.path, type: 'symlink', mode: 0o777, ...owner, linkname: data.toString('utf8') });
    else entries.push({ name: r.path, type: 'file', mode: r.mode === '100755' ? EXEC_MODE : FILE_MODE, ...owner, data });
  }
  return entries;
}

/**
 * Pure: throws InputError when the listing holds a name twice or a path below a symbolic
 * link. Git never writes such a tree, but one crafted object can hold both `d` (a link to
 * `/forge`) and `d/wrapper.sh`: extracted in order, the file would be written through the link
 * into the image, over the root wrapper.
 */
export function refuseUnsafeTree(records: readonly { mode: string; path: string }[]): void {
  // Everything that is not a directory: a file, a link, a submodule (an empty directory in the archive, never a parent).
  const leaves = new Map<string, string>();
  for (const r of records) {
    if (leaves.has(r.path)) throw new InputError(`the tree names ${JSON.stringify(r.path)} twice; swarm cells refuse such a tree`);
    leaves.set(r.path, r.mode);
  }
  for (const r of records) {
    const parts = r.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      const mode = leaves.get(dir);
      if (mode !== undefined)
        throw new InputError(
          `the tree has ${JSON.stringify(r.path)} below ${mode === '120000' ? 'the symbolic link' : 'the entry'} ${JSON.stringify(dir)}; swarm cells refuse such a tree`,
        );
    }
  }
}
