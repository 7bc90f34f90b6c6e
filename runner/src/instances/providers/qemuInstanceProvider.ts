import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CELL_HOME, CELL_SCRATCH } from '../../cells/bubblewrapArgs.js';
import { buildCellEnvironment } from '../../cells/cellEnvironment.js';
import { runnerStateDir } from '../../cells/cellIdentity.js';
import { dedicatedCellUser } from '../../hostguard/cellUser.js';
import { baseInitramfs, guestReportedReady, guestStartReport, requestArchive } from '../../cells/qemu/guestImage.js';
import { buildQemuArgs } from '../../cells/qemu/qemuArgs.js';
import {
  chooseAccelerator,
  confinedRootArgs,
  findQemuTools,
  hostTscKhz,
  type QemuTools,
  sharedRootArgs,
  virtiofsdArgs,
  waitForFile,
} from '../../cells/qemu/qemuRuntime.js';
import { probeSandboxLayout } from '../../cells/sandboxLayout.js';
import type { Observation } from '../../protocol/instanceCell.js';
import { capabilityDescriptor } from '../capabilityMatrix.js';
import { instanceKey } from './hostInstanceProvider.js';
import { isTombstoned, journalLines, livePid, observeIncarnation, startDecision, readOr, tombstone } from './incarnationFiles.js';
import type { EffectOutcome, InstanceProvider, InstanceRef, ProbeOutcome } from './instanceProvider.js';

const DEFAULT_COMMAND = ['sleep', 'infinity'];
const DEFAULT_MEMORY_MIB = 512;
/** A boot under TCG on a loaded machine takes tens of seconds; KVM takes one or two. */
const START_DEADLINE_MS = 120_000;

/**
 * Long-lived micro-VMs: the same kernel, initramfs and read-only host root over virtiofs as
 * qemu cells, but detached from the runner (they outlive it) and booted in instance mode,
 * where /init starts the command and reports `ready` on the status port once the spec's
 * readiness probe passes inside the guest. One directory per incarnation holds its boot
 * files and pids; the provider's journal records each start and stop it made.
 */
export class QemuInstanceProvider implements InstanceProvider {
  readonly name = 'qemu' as const;
  private readonly root: string;
  private readonly cacheDir: string;
  private tools: QemuTools | { missing: string } | null = null;

  constructor(options: { stateDir?: string } = {}) {
    const stateDir = options.stateDir ?? runnerStateDir();
    this.root = join(stateDir, 'instances', 'qemu');
    this.cacheDir = join(stateDir, 'qemu');
  }

  capabilities() {
    return capabilityDescriptor('qemu');
  }

  async available() {
    const t = (this.tools ??= findQemuTools());
    return 'missing' in t ? { ok: false, reason: t.missing } : { ok: true, reason: `qemu microvm (${t.kernel.kernel})` };
  }

  incarnationDir(instanceId: string, generation: number): string {
    return join(this.root, instanceKey(instanceId), `g${generation}`);
  }

  async create(ref: InstanceRef): Promise<EffectOutcome> {
    if (ref.spec.allow_net) throw new Error('qemu instances have no network device in this build; drop allow_net or use a docker instance');
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    mkdirSync(join(dir, '..'), { recursive: true });
    try {
      mkdirSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const obs = await this.inspect(ref.instance_id, ref.generation);
      if (obs.runtime_state !== 'created') return { changed: false, observation: obs };
    }
    writeFileSync(join(dir, 'spec.json'), JSON.stringify({ operation_id: ref.operation_id, spec: ref.spec }));
    await this.bootUntilStarted(dir, ref);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async start(ref: InstanceRef): Promise<EffectOutcome> {
    const obs = await this.inspect(ref.instance_id, ref.generation);
    if (startDecision(obs, ref.instance_id) === 'already_running') return { changed: false, observation: obs };
    await this.bootUntilStarted(this.incarnationDir(ref.instance_id, ref.generation), ref);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async stop(ref: InstanceRef): Promise<EffectOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    const changed = this.halt(dir);
    return { changed, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async destroy(ref: InstanceRef): Promise<EffectOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    if (isTombstoned(dir)) return { changed: false, observation: await this.inspect(ref.instance_id, ref.generation) };
    this.halt(dir);
    tombstone(dir, ref.operation_id);
    return { changed: true, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async inspect(instanceId: string, generation: number): Promise<Observation> {
    const dir = this.incarnationDir(instanceId, generation);
    return observeIncarnation(dir, generation, livePid(join(dir, 'qemu.pid'), dir), 'vm');
  }

  async probe(ref: InstanceRef): Promise<ProbeOutcome> {
    const dir = this.incarnationDir(ref.instance_id, ref.generation);
    if (livePid(join(dir, 'qemu.pid'), dir) === null) return { ready: false, detail: 'VM not running' };
    const nonce = readOr(join(dir, 'boot', 'nonce'));
    const status = readOr(join(dir, 'boot', 'status'));
    return guestReportedReady(status, nonce)
      ? { ready: true, detail: 'guest reported ready' }
      : { ready: false, detail: 'guest has not reported ready' };
  }

  journal(instanceId: string, generation: number): string[] {
    return journalLines(this.incarnationDir(instanceId, generation));
  }

  /**
   * Boots the VM and returns once its guest runs the instance's command, so the observation
   * create and start return is the VM's, not a process that may be dying. A VM that exits
   * before its guest starts (qemu or virtiofsd failing as they start) is booted once more:
   * nothing of the instance ran in it.
   */
  private async bootUntilStarted(dir: string, ref: InstanceRef): Promise<void> {
    const what = `the VM of instance ${ref.instance_id} (generation ${ref.generation})`;
    for (let attempt = 1; ; attempt++) {
      const { nonce, qemu } = await this.boot(dir, ref);
      const outcome = await awaitGuestStart(join(dir, 'boot'), nonce, qemu, START_DEADLINE_MS);
      if (outcome.kind === 'started') return;
      this.halt(dir);
      if (outcome.kind === 'died' && attempt < 2) continue;
      const boot = join(dir, 'boot');
      if (outcome.kind === 'fail') throw new Error(`${what} could not start its command: ${outcome.reason}`);
      if (outcome.kind === 'died')
        throw new Error(
          `${what} exited as it booted, twice: ${lastLine(join(boot, 'qemu.log')) || lastLine(join(boot, 'virtiofsd.log')) || `see ${boot}/console.log`}`,
        );
      throw new Error(`${what} did not start its command within ${START_DEADLINE_MS / 1000} s; its console is in ${boot}/console.log`);
    }
  }

  private async boot(dir: string, ref: InstanceRef): Promise<{ nonce: string; qemu: ChildProcess }> {
    const tools = (this.tools ??= findQemuTools());
    if ('missing' in tools) throw new Error(`qemu instances unavailable: ${tools.missing}`);
    const accel = await chooseAccelerator(tools, this.cacheDir);
    const layout = probeSandboxLayout(process.env);
    const boot = join(dir, 'boot');
    rmSync(boot, { recursive: true, force: true });
    const sock = join(boot, 'sock');
    mkdirSync(sock, { recursive: true, mode: 0o700 });
    const nonce = randomBytes(16).toString('hex');
    writeFileSync(join(boot, 'nonce'), nonce);
    const env = buildCellEnvironment(process.env, CELL_HOME, '/tmp', {
      ...ref.spec.env,
      FORGE_INSTANCE_ID: ref.instance_id,
      FORGE_INSTANCE_GENERATION: String(ref.generation),
    });
    const initrd = join(boot, 'initrd');
    writeFileSync(
      initrd,
      Buffer.concat([
        readFileSync(baseInitramfs(this.cacheDir, tools.kernel, tools.busybox)),
        requestArchive({
          mode: 'instance',
          nonce,
          env,
          argv: ref.spec.command ?? DEFAULT_COMMAND,
          cwd: CELL_SCRATCH,
          worktree: null,
          readiness: ref.spec.readiness ?? [],
          user: dedicatedCellUser(process.env),
        }),
      ]),
    );
    // Detached on purpose: an instance outlives the runner that started it (no --die-with-parent).
    const detachedRoot = (binds: { rw: string[]; ro: string[]; dev?: string[] }) =>
      confinedRootArgs(layout, binds).filter((a) => a !== '--die-with-parent');
    const vfsSock = join(sock, 'root.sock');
    const share = sharedRootArgs(layout, sock);
    const vfsLog = openSync(join(boot, 'virtiofsd.log'), 'a', 0o600);
    const vfs = spawn(
      tools.bwrap,
      [...share.bwrap.filter((a) => a !== '--die-with-parent'), ...virtiofsdArgs(tools.virtiofsd, vfsSock, share.source)],
      { detached: true, stdio: ['ignore', 'ignore', vfsLog] },
    );
    closeSync(vfsLog);
    vfs.unref();
    writeFileSync(join(dir, 'virtiofsd.pid'), String(vfs.pid));
    if (!(await waitForFile(vfsSock, 5000, vfs))) throw new Error('virtiofsd did not start');
    const args = buildQemuArgs({
      accel: accel.accel,
      kernel: tools.kernel.kernel,
      initrd,
      memoryMib: Math.max(256, ref.spec.memory_mib ?? DEFAULT_MEMORY_MIB),
      cpus: 1,
      tscKhz: hostTscKhz(),
      consoleLog: join(boot, 'console.log'),
      statusFile: join(boot, 'status'),
      outputSocket: null,
      shares: [{ tag: 'forge-root', socket: vfsSock }],
    });
    // The command's output port goes to a file here (a long-lived instance has no reader).
    args.push('-chardev', `file,id=output,path=${join(boot, 'output.log')}`, '-device', 'virtserialport,chardev=output,name=forge.output');
    const dev = accel.accel === 'kvm' ? ['/dev/kvm'] : [];
    // qemu's own complaints (never the guest's output, which goes to console.log) say why a VM
    // that was started is not running.
    const qemuLog = openSync(join(boot, 'qemu.log'), 'a', 0o600);
    const qemu = spawn(tools.bwrap, [...detachedRoot({ rw: [boot], ro: [tools.kernel.kernel], dev }), '--', tools.qemu, ...args], {
      detached: true,
      stdio: ['ignore', 'ignore', qemuLog],
    });
    closeSync(qemuLog);
    qemu.unref();
    writeFileSync(join(dir, 'qemu.pid'), String(qemu.pid));
    appendFileSync(join(dir, 'journal'), `start ${qemu.pid} ${Date.now()}\n`);
    return { nonce, qemu };
  }

  /** Stops the VM and its virtiofsd; true when something was running. */
  private halt(dir: string): boolean {
    const pid = livePid(join(dir, 'qemu.pid'), dir);
    for (const f of ['qemu.pid', 'virtiofsd.pid']) {
      const p = livePid(join(dir, f), dir);
      if (p !== null) {
        try {
          process.kill(-p, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    if (pid === null) return false;
    const until = Date.now() + 5000;
    while (Date.now() < until && livePid(join(dir, 'qemu.pid'), dir) !== null)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    appendFileSync(join(dir, 'journal'), `stop ${pid} ${Date.now()}\n`);
    return true;
  }
}

type StartOutcome = { kind: 'started' } | { kind: 'fail'; reason: string } | { kind: 'died' } | { kind: 'timeout' };

/** Waits for the guest's word on its status port, or for its VM's end. */
async function awaitGuestStart(boot: string, nonce: string, qemu: ChildProcess, deadlineMs: number): Promise<StartOutcome> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const report = guestStartReport(readOr(join(boot, 'status')), nonce);
    if (report) return report;
    if (qemu.exitCode !== null || qemu.signalCode !== null) {
      // The guest may have written its last word as the VM went down.
      return guestStartReport(readOr(join(boot, 'status')), nonce) ?? { kind: 'died' };
    }
    if (Date.now() > until) return { kind: 'timeout' };
    await new Promise((r) => setTimeout(r, 20));
  }
}

function lastLine(path: string): string {
  const lines = readOr(path).trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}
