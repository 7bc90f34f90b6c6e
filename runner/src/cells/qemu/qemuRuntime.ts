import { ancestorsBelowMasks } from '../bubblewrapArgs.js';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { SandboxLayout } from '../sandboxLayout.js';
import {
  baseInitramfs,
  findBusybox,
  findGuestKernel,
  type GuestKernel,
  type GuestRequest,
  parseGuestStatus,
  requestArchive,
} from './guestImage.js';
import { buildQemuArgs, tscKhzFromCpuinfo } from './qemuArgs.js';

export const QEMU_BINARY = 'qemu-system-x86_64';
export const VIRTIOFSD = '/usr/lib/qemu/virtiofsd';

export interface QemuTools {
  qemu: string;
  virtiofsd: string;
  bwrap: string;
  kernel: GuestKernel;
  busybox: string;
}

/** What is missing for qemu cells, as one line with the fix; or the tools. */
export function findQemuTools(env: NodeJS.ProcessEnv = process.env): QemuTools | { missing: string } {
  const which = (name: string) => {
    const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    return r.status === 0 ? r.stdout.trim() : null;
  };
  const qemu = env.FORGE_QEMU_BINARY ?? which(QEMU_BINARY);
  if (!qemu)
    return { missing: `${QEMU_BINARY} not found; install qemu-system-x86 (apt-get install --no-install-recommends qemu-system-x86)` };
  const virtiofsd = env.FORGE_VIRTIOFSD ?? (existsSync(VIRTIOFSD) ? VIRTIOFSD : which('virtiofsd'));
  if (!virtiofsd) return { missing: 'virtiofsd not found (it ships with qemu-system-common at /usr/lib/qemu/virtiofsd)' };
  const bwrap = which('bwrap');
  if (!bwrap)
    return { missing: 'bubblewrap (bwrap) not found; qemu cells confine qemu and virtiofsd with it (apt-get install bubblewrap)' };
  const kernel = findGuestKernel(env);
  if (!kernel)
    return { missing: 'no guest kernel: install linux-image-cloud-amd64 (a /boot/vmlinuz-*-cloud-amd64) or set FORGE_QEMU_KERNEL' };
  const busybox = findBusybox();
  if (!busybox) return { missing: 'no static busybox for the guest initramfs; install busybox-static' };
  if (process.getuid?.() !== 0) return { missing: 'virtiofsd needs root: run the runner as root to use qemu cells' };
  return { qemu, virtiofsd, bwrap, kernel, busybox };
}

export interface Accelerator {
  accel: 'kvm' | 'tcg';
  reason: string;
}

/**
 * KVM only when it really boots here: /dev/kvm exists on these machines but KVM hangs or
 * aborts, so a short probe boot decides, cached per kernel/qemu for an hour on disk.
 */
export async function chooseAccelerator(tools: QemuTools, cacheDir: string, env: NodeJS.ProcessEnv = process.env): Promise<Accelerator> {
  if (env.FORGE_QEMU_ACCEL === 'tcg') return { accel: 'tcg', reason: 'FORGE_QEMU_ACCEL=tcg' };
  let kvmUsable = false;
  try {
    const st = statSync('/dev/kvm');
    kvmUsable = st.isCharacterDevice();
  } catch {
    return { accel: 'tcg', reason: 'no /dev/kvm' };
  }
  if (!kvmUsable) return { accel: 'tcg', reason: '/dev/kvm is not a device' };
  const cacheFile = join(cacheDir, 'accel.json');
  const key = `${tools.qemu}|${tools.kernel.kernel}|${statSync(tools.kernel.kernel).mtimeMs}`;
  try {
    const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as Accelerator & { key: string; at: number };
    if (cached.key === key && Date.now() - cached.at < 3600_000 && env.FORGE_QEMU_ACCEL !== 'kvm')
      return { accel: cached.accel, reason: `${cached.reason} (probed ${new Date(cached.at).toISOString()})` };
  } catch {
    /* probe */
  }
  const started = Date.now();
  const ok = await bootOnce(
    tools,
    cacheDir,
    'kvm',
    { mode: 'probe', nonce: randomBytes(8).toString('hex'), env: {}, argv: [], cwd: '/', worktree: null },
    4000,
  );
  const result: Accelerator = ok
    ? { accel: 'kvm', reason: `KVM probe booted in ${Date.now() - started} ms` }
    : { accel: 'tcg', reason: 'KVM probe did not boot within 4 s (KVM hangs or aborts on this machine); using TCG' };
  if (env.FORGE_QEMU_ACCEL === 'kvm' && !ok) throw new Error('FORGE_QEMU_ACCEL=kvm but the KVM probe did not boot');
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(cacheFile, JSON.stringify({ ...result, key, at: Date.now() }));
  return result;
}

/** Boots a VM with no shares (probe or bare mode) and says whether it reported in time. */
async function bootOnce(
  tools: QemuTools,
  cacheDir: string,
  accel: 'kvm' | 'tcg',
  request: GuestRequest,
  deadlineMs: number,
): Promise<boolean> {
  const dir = join(cacheDir, `probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  try {
    const initrd = join(dir, 'initrd');
    writeFileSync(initrd, Buffer.concat([readFileSync(baseInitramfs(cacheDir, tools.kernel, tools.busybox)), requestArchive(request)]));
    const args = buildQemuArgs({
      accel,
      kernel: tools.kernel.kernel,
      initrd,
      memoryMib: 256,
      cpus: 1,
      tscKhz: null,
      consoleLog: join(dir, 'console.log'),
      statusFile: join(dir, 'status'),
      outputSocket: null,
      shares: [],
    });
    // Under bwrap --die-with-parent (no other confinement: the probe VM has no shares): the probe
    // is the boot that hangs on these machines and only the runner's timer ends it, so a runner
    // killed meanwhile must take its probe VM with it (one was found still spinning 40 min on).
    const child = spawn(tools.bwrap, ['--dev-bind', '/', '/', '--die-with-parent', '--', tools.qemu, ...args], {
      stdio: 'ignore',
      detached: true,
    });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const timer = setTimeout(() => killGroup(child), deadlineMs);
    await exited;
    clearTimeout(timer);
    const status = existsSync(join(dir, 'status')) ? parseGuestStatus(readFileSync(join(dir, 'status'), 'utf8'), request.nonce) : null;
    return status?.kind === 'probe';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function hostTscKhz(): number | null {
  try {
    return tscKhzFromCpuinfo(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return null;
  }
}

export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/**
 * The bwrap arguments that confine a virtiofsd (or qemu): the host root read-only with the
 * same masks as host cells, so a guest sees exactly what a host cell would, and nothing the
 * runner's own files or secrets hold.
 */
export function confinedRootArgs(layout: SandboxLayout, binds: { rw: string[]; ro: string[]; dev?: string[] }, shareNet = false): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const dir of layout.tmpfsMasks) args.push('--tmpfs', dir);
  for (const dir of layout.reexposed) {
    for (const up of ancestorsBelowMasks(dir, layout.tmpfsMasks)) args.push('--perms', '0755', '--dir', up);
    args.push('--ro-bind', dir, dir);
  }
  for (const file of layout.nullMasks) args.push('--ro-bind', '/dev/null', file);
  if (!layout.tmpfsMasks.includes('/run')) args.push('--tmpfs', '/run');
  for (const d of binds.rw) args.push('--bind', d, d);
  for (const d of binds.ro) args.push('--ro-bind', d, d);
  for (const d of binds.dev ?? []) args.push('--dev-bind', d, d);
  // No --new-session: the confined process stays in the runner-made process group, so one
  // group kill ends bwrap and everything under it at once (no tty is involved).
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', ...(shareNet ? [] : ['--unshare-net']), '--die-with-parent');
  return args;
}

/** Where a host-root share is mounted inside its virtiofsd's sandbox. */
const SHARE_AT = '/forge-share';
/** What virtiofsd itself needs to run, bound read-only beside the share. */
const RUNTIME_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

/**
 * The bwrap arguments of the virtiofsd that exports the host root to a guest. The share is a
 * second, read-only view of the host at SHARE_AT with the same masks as host cells (plus the
 * host's /proc, /sys and /dev), so the one writable place virtiofsd needs (its socket
 * directory) is not inside what the guest sees. Returns the bwrap arguments and the source.
 */
export function sharedRootArgs(layout: SandboxLayout, sockDir: string): { bwrap: string[]; source: string } {
  const at = (p: string) => `${SHARE_AT}${p}`;
  const args = ['--ro-bind', '/', SHARE_AT];
  for (const dir of ['/proc', '/sys', '/dev', ...layout.tmpfsMasks, ...(layout.tmpfsMasks.includes('/run') ? [] : ['/run'])])
    args.push('--tmpfs', at(dir));
  for (const dir of layout.reexposed) {
    // Made on the way inside a mask: 0755, or the guest's cell user could not pass (bwrap's own are 0700).
    for (const up of ancestorsBelowMasks(dir, layout.tmpfsMasks)) args.push('--perms', '0755', '--dir', at(up));
    args.push('--ro-bind', dir, at(dir));
  }
  for (const file of layout.nullMasks) args.push('--ro-bind', '/dev/null', at(file));
  for (const dir of RUNTIME_DIRS) args.push('--ro-bind-try', dir, dir);
  args.push('--dev', '/dev', '--proc', '/proc', '--bind', sockDir, sockDir);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--die-with-parent');
  return { bwrap: args, source: SHARE_AT };
}

/**
 * The virtiofsd command line after bwrap's own arguments. It cannot create device nodes
 * (mknod dropped) nor keep setuid bits on writes (fsetid dropped), and may hold a descriptor
 * per file the guest has open or cached (a large tree otherwise exhausts a low limit).
 */
export function virtiofsdArgs(virtiofsd: string, socket: string, source: string): string[] {
  return [
    '--',
    virtiofsd,
    `--socket-path=${socket}`,
    '-o',
    `source=${source}`,
    '-o',
    'cache=auto',
    '-o',
    'sandbox=chroot',
    '-o',
    'no_posix_lock',
    '-o',
    'modcaps=-mknod:-fsetid',
    '--rlimit-nofile=1000000',
    '-o',
    'log_level=err',
  ];
}

/**
 * How many guest inodes of a share virtiofsd can serve at once: it keeps a descriptor for
 * each, up to the descriptor limit it inherits from the runner (it cannot raise it without
 * CAP_SYS_RESOURCE). Half of that leaves room for open files and its own needs.
 */
export function virtiofsdInodeBudget(limitsText: string): number {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(limitsText);
  const soft = m?.[1] === 'unlimited' ? 1_000_000 : Number(m?.[1] ?? 1024);
  const hard = m?.[2] === 'unlimited' ? 1_000_000 : Number(m?.[2] ?? soft);
  // virtiofsd raises its soft limit to the hard one where it can.
  return Math.max(256, Math.floor(Math.max(soft, hard) / 2));
}

/** Listens on a unix socket for the guest's output port; resolves the server once listening. */
export function listenUnix(path: string, onData: (chunk: Buffer) => void): Promise<{ server: Server; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let resolveEnded!: () => void;
    const ended = new Promise<void>((r) => (resolveEnded = r));
    const server = createServer((sock) => {
      sock.on('data', onData);
      sock.on('close', () => resolveEnded());
      sock.on('error', () => resolveEnded());
    });
    server.once('error', reject);
    server.listen(path, () => resolve({ server, ended }));
  });
}

export async function waitForFile(path: string, ms: number, child?: ChildProcess): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (existsSync(path)) return true;
    if (child && (child.exitCode !== null || child.signalCode !== null)) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  return existsSync(path);
}
