import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { SandboxLayout } from '../sandboxLayout.js';
import { baseInitramfs, type GuestRequest, parseGuestStatus, requestArchive } from './guestImage.js';
import { mountWorktree, prepareVmMounts, removeVmDir } from './handoverMounts.js';
import { buildQemuArgs } from './qemuArgs.js';
import {
  type Accelerator,
  confinedRootArgs,
  hostTscKhz,
  killGroup,
  type QemuTools,
  sharedRootArgs,
  virtiofsdArgs,
  waitForFile,
} from './qemuRuntime.js';

/** Guest memory below this does not boot the cloud kernel with its modules. */
export const MIN_MEMORY_MIB = 256;

/** What a VM is booted with, fixed before any cell exists: VMs of one shape are interchangeable. */
export interface VmShape {
  /** An image's root directory, or null for the host's root (masked like a host cell's). */
  rootDir: string | null;
  memoryMib: number;
  cpus: number;
  /** A NIC that reaches only the runner's egress proxy on this port; null: no network device. */
  egressPort: number | null;
  deps: ReadonlyArray<{ tag: string; source: string }>;
  /** Guest inodes of shared filesystems before unused ones are dropped (virtiofsd descriptors). */
  inodeBudget: number;
}

/** Pure: VMs with equal keys can serve each other's cells. */
export function shapeKey(s: VmShape): string {
  return JSON.stringify([s.rootDir, s.memoryMib, s.cpus, s.egressPort, s.deps.map((d) => [d.tag, d.source]), s.inodeBudget]);
}

export interface VmRuntime {
  tools: QemuTools;
  accel: Accelerator;
  layout: SandboxLayout;
  cacheDir: string;
  /** Where VM directories live (the same place gc looks: qemu/cells). */
  vmsDir: string;
}

const exitOf = (c: ChildProcess): Promise<unknown> | undefined =>
  c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r));

/**
 * One micro-VM booted before its cell: virtiofsd for the root, for the hand-over share and for
 * each shared dependency, the output and request listeners, qemu, all confined by bubblewrap
 * and dying with the runner. It serves exactly one cell (handOver once), then is destroyed.
 */
export class MicroVm {
  readonly id = `vm-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  readonly dir: string;
  readonly shareDir: string;
  readonly bootNonce = randomBytes(16).toString('hex');
  readonly exited: Promise<void>;
  /** The guest's output port closed (the VM is going down): everything it printed has arrived. */
  outputEnded: Promise<void> = Promise.resolve();
  private readonly children: ChildProcess[] = [];
  private qemu: ChildProcess | null = null;
  private qemuStderr = '';
  private sink: ((chunk: Buffer) => void) | null = null;
  private servers: Server[] = [];
  private requestConn: Promise<Socket> | null = null;
  private taken = false;
  private dead = false;
  private resolveExited!: () => void;
  private readyFlag = false;

  constructor(
    readonly shape: VmShape,
    private readonly rt: VmRuntime,
  ) {
    this.dir = join(rt.vmsDir, this.id);
    this.shareDir = join(this.dir, 'share');
    this.exited = new Promise((r) => (this.resolveExited = r));
  }

  get state(): 'booting' | 'ready' | 'taken' | 'dead' {
    if (this.dead) return 'dead';
    if (this.taken) return 'taken';
    return this.readyFlag ? 'ready' : 'booting';
  }

  /** Starts everything; resolves once qemu is spawned (the guest boots on). Throws if a part cannot start. */
  async boot(): Promise<void> {
    const { tools, layout, accel } = this.rt;
    const sockDir = join(this.dir, 'sock');
    mkdirSync(sockDir, { recursive: true, mode: 0o700 });
    mkdirSync(join(this.shareDir, 'w'), { recursive: true, mode: 0o700 });
    writeFileSync(join(this.dir, 'runner.pid'), String(process.pid));
    prepareVmMounts(this.dir, this.shareDir);
    const shares = [
      { tag: 'forge-root', socket: join(sockDir, 'root.sock') },
      { tag: 'forge-work', socket: join(sockDir, 'work.sock') },
    ];
    const rootShare = this.shape.rootDir
      ? { bwrap: confinedRootArgs(layout, { rw: [sockDir], ro: [this.shape.rootDir] }), source: this.shape.rootDir }
      : sharedRootArgs(layout, sockDir);
    this.startVirtiofsd([...rootShare.bwrap, ...virtiofsdArgs(tools.virtiofsd, shares[0]!.socket, rootShare.source)]);
    this.startVirtiofsd([
      ...confinedRootArgs(layout, { rw: [sockDir, this.shareDir], ro: [] }),
      ...virtiofsdArgs(tools.virtiofsd, shares[1]!.socket, this.shareDir),
    ]);
    for (const d of this.shape.deps) {
      const share = { tag: d.tag, socket: join(sockDir, `${d.tag}.sock`) };
      shares.push(share);
      this.startVirtiofsd([
        ...confinedRootArgs(layout, { rw: [sockDir], ro: [d.source] }),
        ...virtiofsdArgs(tools.virtiofsd, share.socket, d.source),
      ]);
    }
    for (const [i, s] of shares.entries()) {
      if (!(await waitForFile(s.socket, 15_000, this.children[i]))) {
        const c = this.children[i]!;
        const how = c.exitCode !== null || c.signalCode !== null ? `exited (${c.exitCode ?? c.signalCode})` : 'no socket after 15 s';
        const said = this.stderrTails.get(c)?.trim().split('\n').at(-1);
        throw new Error(`virtiofsd for ${s.tag} did not start: ${how}${said ? `: ${said}` : ''}`);
      }
    }
    const outputSocket = join(this.dir, 'output.sock');
    const requestSocket = join(this.dir, 'request.sock');
    this.outputEnded = (await this.listen(outputSocket, (sock) => sock.on('data', (chunk: Buffer) => this.sink?.(chunk)))).ended;
    let connected!: (s: Socket) => void;
    this.requestConn = new Promise((r) => (connected = r));
    await this.listen(requestSocket, (sock) => connected(sock));
    const initrd = join(this.dir, 'initrd');
    const boot: GuestRequest = {
      mode: 'pool',
      nonce: this.bootNonce,
      env: {},
      argv: [],
      cwd: '/',
      worktree: null,
      net: this.shape.egressPort !== null,
      inodeBudget: this.shape.inodeBudget,
      deps: [],
    };
    writeFileSync(
      initrd,
      Buffer.concat([readFileSync(baseInitramfs(this.rt.cacheDir, tools.kernel, tools.busybox)), requestArchive(boot)]),
    );
    const args = buildQemuArgs({
      accel: accel.accel,
      kernel: tools.kernel.kernel,
      initrd,
      memoryMib: Math.max(MIN_MEMORY_MIB, this.shape.memoryMib),
      cpus: this.shape.cpus,
      tscKhz: hostTscKhz(),
      consoleLog: join(this.dir, 'console.log'),
      statusFile: join(this.dir, 'status'),
      outputSocket,
      requestSocket,
      shares,
      egressProxyPort: this.shape.egressPort,
      busybox: tools.busybox,
    });
    const dev = accel.accel === 'kvm' ? ['/dev/kvm'] : [];
    // qemu itself is confined too: read-only host view, only this VM's directory writable.
    const vm = (this.qemu = spawn(
      tools.bwrap,
      [
        ...confinedRootArgs(layout, { rw: [this.dir], ro: [tools.kernel.kernel], dev }, this.shape.egressPort !== null),
        '--',
        tools.qemu,
        ...args,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    ));
    this.children.push(vm);
    vm.stderr!.on('data', (d: Buffer) => (this.qemuStderr = (this.qemuStderr + d.toString()).slice(-2000)));
    vm.once('exit', () => {
      this.dead = true;
      this.resolveExited();
    });
    void this.watchReady();
  }

  /** Notices the guest's "waiting" line (for the pool's counts; a cell may take a VM still booting). */
  private async watchReady(): Promise<void> {
    const status = join(this.dir, 'status');
    while (!this.dead && !this.taken && !this.readyFlag) {
      await new Promise((r) => setTimeout(r, 25).unref());
      if (existsSync(status) && parseGuestStatus(readFileSync(status, 'utf8'), this.bootNonce)?.kind === 'waiting') this.readyFlag = true;
    }
  }

  /**
   * Gives the VM its one cell: the worktree bind-mounted into the hand-over share (its .git
   * read-only), then the request written to the guest once and the port closed.
   */
  async handOver(
    request: GuestRequest,
    worktree: { top: string; identity?: { dev: number; ino: number } } | null,
    output: (chunk: Buffer) => void,
  ): Promise<void> {
    if (this.taken) throw new Error(`VM ${this.id} already served a cell`);
    this.taken = true;
    if (this.dead) throw new Error(`VM ${this.id} ended before its cell (${this.lastWords()})`);
    this.sink = output;
    if (worktree) mountWorktree(worktree.top, worktree.identity, join(this.dir, 'stage'), join(this.shareDir, 'w'));
    const conn = await Promise.race([this.requestConn!, this.exited.then(() => null)]);
    if (!conn) throw new Error(`VM ${this.id} ended before its cell (${this.lastWords()})`);
    conn.end(requestArchive(request));
  }

  /**
   * Resolves once the guest has reported that it waits for its request, or has ended (its
   * status line, not the request port: qemu connects that as soon as it starts).
   */
  async whenWaiting(): Promise<void> {
    const status = join(this.dir, 'status');
    while (!this.dead) {
      if (existsSync(status) && parseGuestStatus(readFileSync(status, 'utf8'), this.bootNonce) !== null) return;
      await new Promise((r) => setTimeout(r, 50).unref());
    }
  }

  /** The status port's content (the cell's exit line is framed with its own nonce). */
  statusText(): string {
    const f = join(this.dir, 'status');
    return existsSync(f) ? readFileSync(f, 'utf8') : '';
  }

  lastWords(): string {
    const consoleLog = join(this.dir, 'console.log');
    const tail = existsSync(consoleLog) ? readFileSync(consoleLog, 'utf8').trim().split('\n').slice(-3).join(' | ') : '';
    return `${this.qemuStderr.trim().split('\n').at(-1) ?? ''} ${tail}`.trim();
  }

  kill(): void {
    if (this.qemu) killGroup(this.qemu);
  }

  /** Kills every process of the VM and removes its directory (never through a mounted worktree). */
  async destroy(): Promise<string | null> {
    this.dead = true;
    for (const c of this.children) killGroup(c);
    await Promise.all(this.children.map(exitOf));
    for (const s of this.servers) s.close();
    const left = removeVmDir(this.dir);
    return left ? `VM directory left (${left}); forge-runner gc removes it` : null;
  }

  private readonly stderrTails = new Map<ChildProcess, string>();

  /** virtiofsd under bubblewrap: `args` are bwrap's, then the virtiofsd command line. */
  private startVirtiofsd(args: string[]): void {
    const child = spawn(this.rt.tools.bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.on('error', () => undefined);
    // Kept for the error when it does not come up: bwrap's or virtiofsd's own last words.
    child.stderr?.on('data', (d: Buffer) => this.stderrTails.set(child, ((this.stderrTails.get(child) ?? '') + d.toString()).slice(-600)));
    this.children.push(child);
  }

  private listen(path: string, onConnection: (sock: Socket) => void): Promise<{ ended: Promise<void> }> {
    return new Promise((resolve, reject) => {
      let closed!: () => void;
      const ended = new Promise<void>((r) => (closed = r));
      const server = createServer((sock) => {
        onConnection(sock);
        sock.on('close', () => closed());
        sock.on('error', () => closed());
      });
      this.servers.push(server);
      server.once('error', reject);
      server.listen(path, () => resolve({ ended }));
    });
  }
}

/** Pool sizing: how many VMs per shape wait ready, within a memory budget. */
