import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { type CpioEntry, cpioArchive } from './cpioArchive.js';
import { GUEST_INIT, GUEST_MODULES } from './guestInit.js';
import { shellQuote } from '../../protocol/shellQuote.js';

export interface GuestKernel {
  kernel: string;
  /** /lib/modules/<version>, or null when the kernel has what it needs built in. */
  modulesDir: string | null;
}

/**
 * The kernel qemu cells boot: FORGE_QEMU_KERNEL, else the newest Debian cloud kernel in
 * /boot (linux-image-cloud-amd64), else any /boot/vmlinuz-*.
 */
export function findGuestKernel(env: NodeJS.ProcessEnv = process.env): GuestKernel | null {
  const pick = (kernel: string): GuestKernel => {
    const version = basename(kernel).replace(/^vmlinuz-/, '');
    const modulesDir = env.FORGE_QEMU_MODULES ?? join('/lib/modules', version);
    return { kernel, modulesDir: existsSync(modulesDir) ? modulesDir : null };
  };
  if (env.FORGE_QEMU_KERNEL) return existsSync(env.FORGE_QEMU_KERNEL) ? pick(env.FORGE_QEMU_KERNEL) : null;
  let files: string[] = [];
  try {
    files = readdirSync('/boot').filter((f) => f.startsWith('vmlinuz-'));
  } catch {
    return null;
  }
  const cloud = files.filter((f) => f.endsWith('-cloud-amd64')).sort();
  const chosen = cloud.at(-1) ?? files.sort().at(-1);
  return chosen ? pick(join('/boot', chosen)) : null;
}

export function findBusybox(): string | null {
  for (const p of ['/bin/busybox', '/usr/bin/busybox']) {
    try {
      // The guest has no libc: only a static busybox (Debian's busybox-static) works.
      if (existsSync(p) && !readFileSync(p).subarray(0, 4096).includes(Buffer.from('ld-linux'))) return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/**
 * The shared part of every cell's initramfs (busybox, modules, /init), built once per
 * (kernel, busybox, init) and cached under the state directory.
 */
export function baseInitramfs(cacheDir: string, kernel: GuestKernel, busybox: string): string {
  const modules = kernel.modulesDir ? GUEST_MODULES.filter((m) => existsSync(join(kernel.modulesDir!, 'kernel', `${m}.ko`))) : [];
  const key = createHash('sha256')
    .update(GUEST_INIT)
    .update(JSON.stringify({ kernel: kernel.kernel, modules, mtime: statSync(kernel.kernel).mtimeMs, busybox: statSync(busybox).mtimeMs }))
    .digest('hex')
    .slice(0, 16);
  const file = join(cacheDir, `initramfs-${key}.cpio`);
  if (existsSync(file)) return file;
  const entries: CpioEntry[] = [
    ...['bin', 'dev', 'proc', 'sys', 'lib', 'lib/modules', 'forge', 'lower', 'upper', 'newroot'].map((d) => ({
      path: d,
      kind: 'dir' as const,
    })),
    { path: 'bin/busybox', kind: 'file', mode: 0o755, data: readFileSync(busybox) },
    { path: 'init', kind: 'file', mode: 0o755, data: Buffer.from(GUEST_INIT) },
    { path: 'forge/modules', kind: 'file', data: Buffer.from(modules.map((m) => basename(m)).join('\n') + '\n') },
    ...modules.map((m) => ({
      path: `lib/modules/${basename(m)}.ko`,
      kind: 'file' as const,
      data: readFileSync(join(kernel.modulesDir!, 'kernel', `${m}.ko`)),
    })),
  ];
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(3).toString('hex')}`;
  writeFileSync(tmp, cpioArchive(entries));
  renameSync(tmp, file);
  return file;
}

export interface GuestRequest {
  /** pool: boot, prepare, then wait for a "run" request on the forge.request port (vmPool.ts). */
  mode: 'run' | 'bare' | 'probe' | 'instance' | 'pool';
  nonce: string;
  /** The command's whole environment. */
  env: Record<string, string>;
  argv: string[];
  cwd: string;
  worktree: string | null;
  /** A network device is present (allow_net): configure it. */
  net?: boolean;
  /** instance mode: the readiness probe argv (same environment); empty = ready once started. */
  readiness?: string[];
  /** Who the command runs as in the guest (never root); bare and probe boots ignore it. */
  user?: { uid: number; gid: number };
  /** Guest inodes of shared filesystems allowed before unused ones are dropped (virtiofsd descriptors). */
  inodeBudget?: number;
  /** Shared dependencies: a virtiofs tag mounted read-only at target, under a guest overlay when writable. */
  deps?: { tag: string; target: string; writable: boolean }[];
}

/**
 * Pure: the script the guest runs for one command: exactly this working directory, this
 * environment (what the shell adds is removed) and this argv, with no parsing of its words
 * (a first word "FOO=bar" is a program name, as on every provider).
 */
export function guestCommandScript(argv: readonly string[], env: Record<string, string>, cwd: string): string {
  return [
    `cd -- ${shellQuote(cwd)} || exit 126`,
    'unset PWD OLDPWD SHLVL PATH',
    ...Object.entries(env).map(([k, v]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`invalid environment variable name ${JSON.stringify(k)}`);
      return `export ${k}=${shellQuote(v)}`;
    }),
    `exec -- ${argv.map(shellQuote).join(' ')}`,
    '',
  ].join('\n');
}

/** Pure: the per-cell archive appended to the base initramfs (the config channel). */
export function requestArchive(r: GuestRequest): Buffer {
  const user = r.user ?? { uid: 0, gid: 0 };
  return cpioArchive([
    { path: 'forge/mode', kind: 'file', data: Buffer.from(r.mode) },
    { path: 'forge/nonce', kind: 'file', data: Buffer.from(r.nonce) },
    { path: 'forge/worktree', kind: 'file', data: Buffer.from(r.worktree ?? '') },
    { path: 'forge/net', kind: 'file', data: Buffer.from(r.net ? 'on' : 'off') },
    { path: 'forge/user', kind: 'file', data: Buffer.from(`${user.uid} ${user.gid}\n`) },
    { path: 'forge/fdbudget', kind: 'file', data: Buffer.from(String(r.inodeBudget ?? 0)) },
    // One line each, "tag<TAB>mode<TAB>target": a target with a tab or newline is refused before.
    {
      path: 'forge/deps',
      kind: 'file',
      data: Buffer.from((r.deps ?? []).map((d) => `${d.tag}\t${d.writable ? 'rw' : 'ro'}\t${d.target}\n`).join('')),
    },
    {
      path: 'forge/ready',
      kind: 'file',
      data: r.readiness?.length ? Buffer.from(guestCommandScript(r.readiness, r.env, r.cwd)) : Buffer.alloc(0),
    },
    {
      path: 'forge/cmd',
      kind: 'file',
      data: Buffer.from(r.mode === 'probe' || r.mode === 'pool' ? '' : guestCommandScript(r.argv, r.env, r.cwd)),
    },
  ]);
}

/** Pure: reads the status port's content; anything that is not our framed line is no status. */
export function parseGuestStatus(
  text: string,
  nonce: string,
): { kind: 'exit'; code: number } | { kind: 'fail'; reason: string } | { kind: 'probe' } | { kind: 'waiting' } | null {
  for (const line of text.split('\n')) {
    const m = /^forge-status (\S+) (exit (\d+)|fail (.*)|probe ok|waiting)$/.exec(line.trim());
    if (!m || m[1] !== nonce) continue;
    if (m[3] !== undefined) return { kind: 'exit', code: Number(m[3]) };
    if (m[4] !== undefined) return { kind: 'fail', reason: m[4] };
    if (m[2] === 'waiting') return { kind: 'waiting' };
    return { kind: 'probe' };
  }
  return null;
}

/** Pure: did this boot (nonce) report its instance ready? */
export function guestReportedReady(text: string, nonce: string): boolean {
  return text.split('\n').some((l) => l.trim() === `forge-status ${nonce} ready`);
}

/** Pure: has this boot (nonce) started its instance's command, or said why it could not? */
export function guestStartReport(text: string, nonce: string): { kind: 'started' } | { kind: 'fail'; reason: string } | null {
  if (text.split('\n').some((l) => l.trim() === `forge-status ${nonce} started`)) return { kind: 'started' };
  const status = parseGuestStatus(text, nonce);
  if (status?.kind === 'fail') return status;
  if (status?.kind === 'exit') return { kind: 'started' };
  return null;
}
