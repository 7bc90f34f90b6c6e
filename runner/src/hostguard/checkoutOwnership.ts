import { closeSync, constants, lchownSync, lstatSync, openSync, readdirSync } from 'node:fs';
import { entryPath, lstatAt, openDirectoryAt } from './beneath.js';

interface Owner {
  uid: number;
  gid: number;
}

/**
 * Who owns each file a patch is about to touch and each missing directory above it, read
 * before a root runner applies the patch to someone's checkout (git apply writes new inodes,
 * owned by root). Returns the function that gives them back afterwards.
 */
export function rememberCheckoutOwners(top: string, paths: string[]): () => void {
  if ((process.getuid?.() ?? 0) !== 0) return () => undefined;
  const topOwner = lstatSync(top);
  if (topOwner.uid === 0) return () => undefined;
  const fallback = { uid: topOwner.uid, gid: topOwner.gid };
  const plan = paths.map((path) => {
    const parts = path.split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
    const owners: (Owner | null)[] = [];
    let dir = top;
    for (const part of parts) {
      dir = `${dir}/${part}`;
      try {
        const st = lstatSync(dir);
        owners.push({ uid: st.uid, gid: st.gid });
      } catch {
        owners.push(null); // made by the apply: it goes to the checkout's owner
      }
    }
    return { parts, owners };
  });
  return () => {
    for (const { parts, owners } of plan) restoreBeneath(top, parts, owners, fallback);
  };
}

/**
 * Walks to `parts` from a descriptor of `top`, each directory opened with O_NOFOLLOW (a
 * component swapped for a link stops the walk, nothing is changed through it), and gives
 * each entry the apply made (root-owned) to its former owner or, if new, the checkout's.
 */
function restoreBeneath(top: string, parts: string[], owners: (Owner | null)[], fallback: Owner): void {
  let fd: number;
  try {
    fd = openSync(top, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    return;
  }
  try {
    for (let i = 0; i < parts.length; i++) {
      const name = parts[i]!;
      let st;
      try {
        st = lstatAt(fd, name);
      } catch {
        return; // deleted by the patch
      }
      const was = owners[i];
      const isFile = i === parts.length - 1;
      // Existing directories keep their owner; new ones and every written file are given back.
      if (st.uid === 0 && (isFile || was === null)) {
        const to = was ?? fallback;
        lchownSync(entryPath(fd, name), to.uid, to.gid);
      }
      if (isFile) return;
      let next: number;
      try {
        next = openDirectoryAt(fd, name);
      } catch {
        return;
      }
      closeSync(fd);
      fd = next;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The loose-object directories (objects/xx) of a repository another user owns, read before a
 * root runner writes objects into it: what git then creates is root's, and the owner could no
 * longer add an object whose name starts with a new directory's prefix. Returns the function
 * that gives the new directories, and the objects written into any directory since, to the
 * objects directory's owner (a directory's mtime says whether it got a new entry).
 */
export function rememberObjectDirs(objectsDir: string): () => void {
  if ((process.getuid?.() ?? 0) !== 0) return () => undefined;
  let owner: Owner;
  try {
    const st = lstatSync(objectsDir);
    if (st.uid === 0 || !st.isDirectory()) return () => undefined;
    owner = { uid: st.uid, gid: st.gid };
  } catch {
    return () => undefined;
  }
  // A second's slack: directory times can be coarser than the clock.
  const since = Date.now() - 1000;
  return () => {
    for (const name of looseObjectDirs(objectsDir)) {
      const dir = `${objectsDir}/${name}`;
      const st = lstatSync(dir);
      if (!st.isDirectory() || st.mtimeMs < since) continue;
      if (st.uid === 0) lchownSync(dir, owner.uid, owner.gid);
      for (const f of readdirSync(dir)) {
        if (lstatSync(`${dir}/${f}`).uid === 0) lchownSync(`${dir}/${f}`, owner.uid, owner.gid);
      }
    }
  };
}

function looseObjectDirs(objectsDir: string): string[] {
  try {
    return readdirSync(objectsDir).filter((n) => /^[0-9a-f]{2}$/.test(n));
  } catch {
    return [];
  }
}
