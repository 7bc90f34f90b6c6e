/**
 * Pure: a cpio "newc" archive, the format the Linux kernel unpacks as an initramfs. Written
 * here so the runner needs no cpio binary; archives can be concatenated (the kernel unpacks
 * them in order, later files win).
 */
export interface CpioEntry {
  path: string;
  /** File contents; absent for directories and symlinks. */
  data?: Buffer;
  kind: 'file' | 'dir' | 'symlink';
  mode?: number;
  /** Symlink target. */
  target?: string;
}

const TYPE = { file: 0o100000, dir: 0o040000, symlink: 0o120000 } as const;

function hex8(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function pad4(n: number): number {
  return (4 - (n % 4)) % 4;
}

export function cpioArchive(entries: readonly CpioEntry[]): Buffer {
  const parts: Buffer[] = [];
  let ino = 1;
  const push = (name: string, mode: number, body: Buffer) => {
    const nameBuf = Buffer.from(name + '\0', 'utf8');
    const header =
      '070701' +
      hex8(ino++) +
      hex8(mode) +
      hex8(0) +
      hex8(0) +
      hex8(1) +
      hex8(0) +
      hex8(body.length) +
      hex8(0) +
      hex8(0) +
      hex8(0) +
      hex8(0) +
      hex8(nameBuf.length) +
      hex8(0);
    parts.push(Buffer.from(header, 'ascii'), nameBuf, Buffer.alloc(pad4(110 + nameBuf.length)), body, Buffer.alloc(pad4(body.length)));
  };
  for (const e of entries) {
    const name = e.path.replace(/^\/+/, '');
    const body =
      e.kind === 'symlink' ? Buffer.from(e.target ?? '', 'utf8') : e.kind === 'file' ? (e.data ?? Buffer.alloc(0)) : Buffer.alloc(0);
    const perm = e.mode ?? (e.kind === 'dir' ? 0o755 : e.kind === 'symlink' ? 0o777 : 0o644);
    push(name, TYPE[e.kind] | perm, body);
  }
  push('TRAILER!!!', 0, Buffer.alloc(0));
  return Buffer.concat(parts);
}
