import { closeSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/** Pure: the flags field of /proc/self/fdinfo/N. */
export function fdinfoFlags(text: string): number | null {
  const m = /^flags:\s*([0-7]+)$/m.exec(text);
  return m ? parseInt(m[1]!, 8) : null;
}

/**
 * Closes every descriptor above 2 this process inherited without close-on-exec (a shell's
 * `251>>file`, a parent's leaked pipe): every child the runner starts (cells, git, qemu)
 * would otherwise inherit it, and a cell could write through it to a host file. Descriptors
 * Node opens itself are close-on-exec, and Node's IPC channel is kept.
 */
export function closeInheritedDescriptors(env: NodeJS.ProcessEnv = process.env): number[] {
  const keep = new Set([0, 1, 2]);
  if (env.NODE_CHANNEL_FD) keep.add(Number(env.NODE_CHANNEL_FD));
  const closed: number[] = [];
  let fds: number[];
  try {
    fds = readdirSync('/proc/self/fd')
      .map(Number)
      .filter((n) => Number.isInteger(n) && !keep.has(n));
  } catch {
    return closed;
  }
  for (const fd of fds) {
    let flags: number | null;
    try {
      flags = fdinfoFlags(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    } catch {
      continue; // the directory handle of the listing itself, already closed
    }
    if (flags === null || (flags & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      /* not ours to close after all */
    }
  }
  return closed;
}
