import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import type { CellSpecInput } from '../../protocol/cellSpec.js';
import type { CellResult } from '../../protocol/cellResult.js';
import type { ProviderHealth } from '../../protocol/health.js';
import type { IsolationReport } from '../../protocol/isolation.js';
import { InputError } from '../../protocol/inputError.js';
import { grantEgress, proxyEnv, runCellLifecycle } from '../cellLifecycle.js';
import { CELL_HOME, CELL_SCRATCH } from '../bubblewrapArgs.js';
import { MIN_MEMORY_MIB, type VmRuntime, type VmShape } from '../qemu/microVm.js';
import { livePoolCounts, poolSettings, VmPool } from '../qemu/vmPool.js';
import { buildCellEnvironment } from '../cellEnvironment.js';
import { newCellId, runnerStateDir } from '../cellIdentity.js';
import { type CellUser, describeCellUser } from '../../hostguard/cellUser.js';
import { vetCellMounts } from '../cellWorktree.js';
import { prepareCellWorktree } from '../cellWorktree.js';
import { type CellProvider, type CellRunOptions, parseCellSpec } from '../provider.js';
import { imageRoot } from '../qemu/imageRoot.js';
import { baseInitramfs, type GuestRequest, parseGuestStatus, requestArchive } from '../qemu/guestImage.js';
import { buildQemuArgs, GUEST_PROXY } from '../qemu/qemuArgs.js';
import { EgressProxy } from '../egressProxy.js';
import {
  type Accelerator,
  chooseAccelerator,
  findQemuTools,
  hostTscKhz,
  killGroup,
  listenUnix,
  type QemuTools,
  virtiofsdInodeBudget,
} from '../qemu/qemuRuntime.js';
import { probeSandboxLayout, realStateDir, type SandboxLayout, withStateDirHidden } from '../sandboxLayout.js';

export interface QemuCellProviderOptions {
  stateDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Bound on the VM pool (FORGE_QEMU_POOL overrides it); 0 for one-shot use. */
  prewarm?: number;
}

const MiB = 1024 * 1024;
/** argv + environment go through the initramfs; a bound keeps the config channel small. */
const MAX_REQUEST_BYTES = 64 * 1024;

/**
 * One throwaway micro-VM per cell: microvm machine, the host root read-only over virtiofs
 * under a private tmpfs overlay, the worktree read-write at its own path, output and exit
 * status on two separate virtio ports. VMs boot ahead of need in a pool (qemu/vmPool.ts) and
 * receive their one cell's request over a third port; each serves exactly one cell. qemu and
 * every virtiofsd run confined by bubblewrap and die with the runner.
 */
/**
 * A VM's memory is allocated for real and its vCPUs are host threads: a spec asking for more
 * than the machine has is bad input, refused before anything starts.
 */
function checkMachineSize(limits: { memory_mib: number; cpus?: number | undefined }): void {
  const hostMib = Math.floor(totalmem() / (1024 * 1024));
  if (limits.memory_mib > hostMib)
    throw new InputError(
      `--memory ${limits.memory_mib} MiB is more than this machine has (${hostMib} MiB); a qemu cell's memory is allocated for real, so ask for less`,
    );
  const cores = availableParallelism();
  if (limits.cpus !== undefined && Math.ceil(limits.cpus) > cores)
    throw new InputError(`--cpus ${limits.cpus} is more than this machine's ${cores} cores; ask for ${cores} or fewer`);
}

export class QemuCellProvider implements CellProvider {
  readonly name = 'qemu' as const;
  private readonly env: NodeJS.ProcessEnv;
  private readonly stateDir: string;
  private readonly cacheDir: string;
  private tools: QemuTools | { missing: string } | null = null;
  private accel: Promise<Accelerator> | null = null;
  private layout: SandboxLayout | null = null;
  private egressState: Promise<{ proxy: EgressProxy; port: number }> | null = null;
  private vmPool: VmPool | null = null;
  private readonly prewarm: number | undefined;

  constructor(options: QemuCellProviderOptions = {}) {
    this.env = options.env ?? process.env;
    this.prewarm = options.prewarm;
    this.stateDir = options.stateDir ?? runnerStateDir(this.env);
    this.cacheDir = join(this.stateDir, 'qemu');
  }

  private findTools(): QemuTools | { missing: string } {
    return (this.tools ??= findQemuTools(this.env));
  }

  accelerator(tools: QemuTools): Promise<Accelerator> {
    this.accel ??= chooseAccelerator(tools, this.cacheDir, this.env);
    this.accel.catch(() => (this.accel = null));
    return this.accel;
  }

  async health(): Promise<ProviderHealth> {
    const tools = this.findTools();
    if ('missing' in tools) return { provider: 'qemu', available: false, reason: tools.missing, isolation: null, details: {} };
    const accel = await this.accelerator(tools);
    return {
      provider: 'qemu',
      available: true,
      reason: `qemu microvm with ${accel.accel.toUpperCase()} (${accel.reason})`,
      isolation: this.describeIsolation(accel, null, null),
      details: {
        qemu: tools.qemu,
        kernel: tools.kernel.kernel,
        accelerator: accel.accel,
        accelerator_reason: accel.reason,
        virtiofsd: tools.virtiofsd,
        pool: this.describePool(),
      },
    };
  }

  /** The runner's egress proxy for allow_net cells, on the host loopback (qemu forwards to it). */
  private egress(): Promise<{ proxy: EgressProxy; port: number }> {
    this.egressState ??= (async () => {
      const proxy = new EgressProxy('127.0.0.1');
      return { proxy, port: await proxy.start() };
    })();
    this.egressState.catch(() => (this.egressState = null));
    return this.egressState;
  }

  async drain(): Promise<void> {
    const pool = this.vmPool;
    this.vmPool = null;
    await pool?.close();
    const e = this.egressState;
    this.egressState = null;
    if (e) await (await e.catch(() => null))?.proxy.close();
  }

  async run(input: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const spec = parseCellSpec(input);
    const tools = this.findTools();
    if ('missing' in tools) throw new InputError(`qemu cells unavailable: ${tools.missing}`);
    checkMachineSize(spec.limits);
    const { worktree, user } = await prepareCellWorktree(spec, this.env, this.stateDir);
    const argv = typeof spec.cmd === 'string' ? ['/bin/sh', '-c', spec.cmd] : spec.cmd;
    const root = spec.image === '' ? null : await imageRoot(spec.image, this.cacheDir);
    const cellId = newCellId();
    const egress = spec.allow_net === false ? null : await this.egress();
    const grant = grantEgress(egress?.proxy ?? null, cellId, spec);
    const netEnv = proxyEnv(grant, GUEST_PROXY.host, GUEST_PROXY.port);
    const cellEnv = buildCellEnvironment(root ? { ...this.env, PATH: root.path } : this.env, CELL_HOME, '/tmp', { ...netEnv, ...spec.env });
    const nonce = randomBytes(16).toString('hex');
    const inodeBudget = virtiofsdInodeBudget(readFileSync('/proc/self/limits', 'utf8'));
    const plan = vetCellMounts(spec, worktree, (top) => top, { env: this.env, stateDir: this.stateDir });
    const worktreeAt = plan.worktree?.target ?? null;
    const badTarget = plan.deps.find((d) => /[\t\n]/.test(d.target));
    if (badTarget)
      throw new InputError(
        `shared dependency target ${JSON.stringify(badTarget.target)} has a tab or newline, which qemu cells cannot mount`,
      );
    const depShares = plan.deps.map((d, i) => ({ ...d, tag: `forge-dep${i}` }));
    const request: GuestRequest = {
      mode: 'run',
      nonce,
      env: cellEnv,
      argv,
      cwd: worktreeAt ?? CELL_SCRATCH,
      worktree: worktreeAt,
      net: Boolean(egress),
      user,
      inodeBudget,
      deps: depShares.map((d) => ({ tag: d.tag, target: d.target, writable: d.layer === 'overlay' })),
    };
    const requestBytes = requestArchive(request);
    if (requestBytes.length > MAX_REQUEST_BYTES) {
      grant?.proxy.revoke(cellId);
      throw new InputError(`command and environment are ${requestBytes.length} bytes; qemu cells take at most ${MAX_REQUEST_BYTES}`);
    }
    const accel = await this.accelerator(tools);
    this.layout ??= probeSandboxLayout(this.env);
    const layout = this.layout;
    mkdirSync(join(this.cacheDir, 'cells'), { recursive: true, mode: 0o700 });
    // By real path: host mounts under it are found (and removed) by the names mountinfo gives.
    const vmsDir = realpathSync(join(this.cacheDir, 'cells'));
    // Every VM's own processes and root share hide the VM directories, wherever the state
    // directory is: no guest (or a compromised qemu or virtiofsd) reaches another VM's hand-over share.
    // The whole state directory is hidden as from host cells (the store, other cells' logs).
    const vmLayout = withStateDirHidden({ ...layout, tmpfsMasks: [...layout.tmpfsMasks, vmsDir] }, realStateDir(this.stateDir));
    const pool = this.pool(() => ({ tools, accel, layout: vmLayout, cacheDir: this.cacheDir, vmsDir }));
    const shape: VmShape = {
      rootDir: root?.dir ?? null,
      memoryMib: Math.max(MIN_MEMORY_MIB, spec.limits.memory_mib),
      cpus: Math.max(1, Math.ceil(spec.limits.cpus ?? 1)),
      egressPort: egress?.port ?? null,
      deps: depShares.map((d) => ({ tag: d.tag, source: d.source })),
      inodeBudget,
    };

    const logDir = join(this.stateDir, 'cells');
    mkdirSync(logDir, { recursive: true });
    const logPath = join(logDir, `${cellId}.log`);
    const isolation = this.describeIsolation(accel, spec, user);
    if (egress) isolation.net = 'allowlist';
    if (user.warning) isolation.warnings.push(user.warning);

    return runCellLifecycle(
      { cellId, provider: 'qemu', spec, options, logPath, worktree, isolation, egress: grant, stateDir: this.stateDir },
      {
        // A VM booted ahead of need (or, on a miss, now): it has not seen any cell and never will again.
        start: async (ctx) => ({ ...(await pool.take(shape)), ctx }),
        launch: (h) =>
          h.vm.handOver(
            request,
            worktree ? { top: worktree.top, ...(worktree.identity ? { identity: worktree.identity } : {}) } : null,
            (c) => h.ctx.output(c),
          ),
        wait: (h) => h.vm.exited,
        settle: async (h, _exited, { killReason, isolation }) => {
          await Promise.race([h.vm.outputEnded, new Promise((r) => setTimeout(r, 1000))]);
          const status = parseGuestStatus(h.vm.statusText(), nonce);
          let code: number | null = null;
          let signal: string | null = null;
          if (killReason) signal = 'SIGKILL';
          else if (status?.kind === 'exit') code = status.code;
          else {
            const why =
              status?.kind === 'fail'
                ? `guest setup failed: ${status.reason}`
                : `the VM ended without an exit status (${h.vm.lastWords()})`.trim();
            isolation.warnings.push(why);
            code = 125;
          }
          return { code, signal, oomKills: 0, pidsLimitHits: 0 };
        },
        kill: (h) => h.vm.kill(),
        cleanup: async (h) => {
          const left = await h?.vm.destroy();
          if (left) isolation.warnings.push(left);
        },
      },
    );
  }

  /** The pool of VMs booted ahead of need; created on first use, closed by drain(). */
  private pool(rt: () => VmRuntime): VmPool {
    if (!this.vmPool) {
      const settings = poolSettings(this.env, { cores: availableParallelism(), memoryMib: Math.floor(totalmem() / MiB) }, this.prewarm);
      if ('error' in settings) throw new InputError(settings.error);
      this.vmPool = new VmPool(settings, rt);
    }
    return this.vmPool;
  }

  /** The pool in one line for health: its size and budget, and what waits now. */
  private describePool(): string {
    const settings = poolSettings(this.env, { cores: availableParallelism(), memoryMib: Math.floor(totalmem() / MiB) }, this.prewarm);
    if ('error' in settings) return settings.error;
    if (settings.size === 0) return 'off (FORGE_QEMU_POOL=0, or one-shot use): every cell boots its VM';
    // Any pool of this runner process (a running fix holds its own provider).
    const c = livePoolCounts();
    const now = c
      ? `${c.ready} ready, ${c.booting} booting (${c.memoryMib} MiB)`
      : 'none waiting (a run fills the pool on its first qemu cell, per shape: root, memory, vCPUs, network, shared dependencies)';
    return `${settings.size} VM(s) per shape within ${settings.budgetMib} MiB: ${now}`;
  }

  /** What the pool holds now, for health; null before the first cell. */
  poolCounts(): ReturnType<VmPool['counts']> | null {
    return this.vmPool?.counts() ?? null;
  }

  /** Boots the same kernel and initramfs and runs argv from the initramfs alone (no shares): the bench's baseline. */
  async bareBoot(argv: string[]): Promise<{ ms: number; code: number | null }> {
    const tools = this.findTools();
    if ('missing' in tools) throw new Error(tools.missing);
    const accel = await this.accelerator(tools);
    const dir = join(this.cacheDir, 'cells', `bare-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'runner.pid'), String(process.pid));
    const nonce = randomBytes(8).toString('hex');
    try {
      const initrd = join(dir, 'initrd');
      writeFileSync(
        initrd,
        Buffer.concat([
          readFileSync(baseInitramfs(this.cacheDir, tools.kernel, tools.busybox)),
          requestArchive({ mode: 'bare', nonce, env: { PATH: '/bin' }, argv, cwd: '/', worktree: null }),
        ]),
      );
      const out = await listenUnix(join(dir, 'output.sock'), () => undefined);
      const args = buildQemuArgs({
        accel: accel.accel,
        kernel: tools.kernel.kernel,
        initrd,
        memoryMib: MIN_MEMORY_MIB,
        cpus: 1,
        tscKhz: hostTscKhz(),
        consoleLog: join(dir, 'console.log'),
        statusFile: join(dir, 'status'),
        outputSocket: join(dir, 'output.sock'),
        shares: [],
      });
      const started = Date.now();
      const child = spawn(tools.qemu, args, { stdio: 'ignore', detached: true });
      const timer = setTimeout(() => killGroup(child), 60_000);
      await new Promise((r) => child.once('exit', r));
      clearTimeout(timer);
      const ms = Date.now() - started;
      out.server.close();
      const status = existsSync(join(dir, 'status')) ? parseGuestStatus(readFileSync(join(dir, 'status'), 'utf8'), nonce) : null;
      return { ms, code: status?.kind === 'exit' ? status.code : null };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  private describeIsolation(accel: Accelerator, spec: ReturnType<typeof parseCellSpec> | null, user: CellUser | null): IsolationReport {
    return {
      mechanism: `qemu-${accel.accel}`,
      degraded: false,
      namespaces: ['vm'],
      net: 'none',
      filesystem:
        'own kernel (microvm); root read-only over virtiofs (the host root with the same paths hidden as host cells: /root, /home, /run, /tmp, secrets; or an image root), under a private tmpfs overlay; ' +
        'worktree read-write over virtiofs at its path (its .git read-only); every guest mount nosuid and nodev; virtiofsd cannot create device nodes; no network device unless allow_net (then a user-mode NIC that reaches only the runner egress proxy)',
      user: user
        ? `${describeCellUser(user)} inside the guest; /init (root) reports the exit status`
        : 'an unprivileged user inside the guest: the worktree owner, else the dedicated cell user; /init (root) reports the exit status',
      masked_paths: this.layout ? [...this.layout.tmpfsMasks, ...this.layout.nullMasks] : [],
      rlimits: { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
      cgroup: {
        version: null,
        memory_max_bytes: spec ? Math.max(MIN_MEMORY_MIB, spec.limits.memory_mib) * 1024 * 1024 : null,
        pids_max: null,
        cpu_quota_cores: spec ? Math.max(1, Math.ceil(spec.limits.cpus ?? 1)) : null,
        reason: 'a VM: memory and vCPUs are the machine size; process count and rlimits are not enforced inside the guest',
      },
      warnings: [],
    };
  }
}
