import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CellSpec, CellSpecInput } from '../../protocol/cellSpec.js';
import type { CellResult, KilledBy } from '../../protocol/cellResult.js';
import type { ProviderHealth } from '../../protocol/health.js';
import type { CgroupReport, IsolationReport } from '../../protocol/isolation.js';
import { InputError } from '../../protocol/inputError.js';
import { captureWorktreeDiff } from '../../workspace/captureWorktreeDiff.js';
import { inspectWorktree, requireDirectory } from '../../workspace/inspectWorktree.js';
import { BoundedOutputCollector } from '../boundedOutput.js';
import { buildBubblewrapArgs, CELL_HOME } from '../bubblewrapArgs.js';
import { type BubblewrapProbe, probeBubblewrap } from '../bubblewrapProbe.js';
import { buildCellEnvironment } from '../cellEnvironment.js';
import { newCellId, runnerStateDir } from '../cellIdentity.js';
import { type CellCgroup, type CgroupSupport, detectCgroupSupport } from '../cgroup.js';
import { decideKilledBy } from '../killedBy.js';
import { type CellProvider, type CellRunOptions, parseCellSpec } from '../provider.js';
import { type HardLimits, parseProcLimits, planRlimits, rlimitLaunch } from '../rlimits.js';
import { probeSandboxLayout, type SandboxLayout } from '../sandboxLayout.js';

export type BubblewrapMode = 'auto' | 'require' | 'off';

export interface HostCellProviderOptions {
  /** auto: bubblewrap when usable, else a loud plain-subprocess fallback. */
  bubblewrap?: BubblewrapMode;
  stateDir?: string;
  /** The runner's environment; only the allowlist of it reaches a cell. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Joins the cell's cgroups, merges stderr into stdout, then execs the rest. Joining from
 * inside the child (before exec) leaves no window in which the command runs unconfined.
 */
function launcherScript(ulimitScript: string): string {
  return `exec 2>&1; while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; ${ulimitScript}exec "$@"`;
}

const SANDBOX_NAMESPACES = ['mount', 'user', 'pid', 'ipc', 'uts', 'cgroup'];

interface Environment {
  bubblewrap: BubblewrapProbe;
  cgroups: CgroupSupport;
  layout: SandboxLayout;
  hardLimits: HardLimits;
}

export class HostCellProvider implements CellProvider {
  readonly name = 'host' as const;
  private readonly mode: BubblewrapMode;
  private readonly env: NodeJS.ProcessEnv;
  private readonly stateDir: string;
  private environment: Promise<Environment> | null = null;
  private readonly cleanups = new Set<Promise<void>>();

  constructor(options: HostCellProviderOptions = {}) {
    this.env = options.env ?? process.env;
    this.mode = options.bubblewrap ?? bubblewrapModeFrom(this.env.FORGE_BUBBLEWRAP);
    this.stateDir = options.stateDir ?? runnerStateDir(this.env);
  }

  /** Probed once per provider: bwrap, cgroups and the mask layout do not change mid-run. */
  private probe(): Promise<Environment> {
    this.environment ??= (async () => ({
      bubblewrap: this.mode === 'off'
        ? { usable: false, path: null, version: null, reason: 'bubblewrap disabled by configuration' }
        : await probeBubblewrap(this.env),
      cgroups: detectCgroupSupport(),
      layout: probeSandboxLayout(this.env),
      hardLimits: parseProcLimits(readFileSync('/proc/self/limits', 'utf8')),
    }))();
    return this.environment;
  }

  /** Waits for background cleanup (cgroup removal) of finished cells. */
  async drain(): Promise<void> {
    while (this.cleanups.size > 0) await Promise.all([...this.cleanups]);
  }

  private track(work: Promise<void>): void {
    const p: Promise<void> = work.catch(() => undefined).finally(() => this.cleanups.delete(p));
    this.cleanups.add(p);
  }

  async health(): Promise<ProviderHealth> {
    const env = await this.probe();
    if (this.mode === 'require' && !env.bubblewrap.usable) {
      return { provider: 'host', available: false, reason: env.bubblewrap.reason, isolation: null, details: {} };
    }
    const isolation = this.describeIsolation(env, false, cgroupCapability(env.cgroups), null);
    return {
      provider: 'host',
      available: true,
      reason: env.bubblewrap.usable
        ? `bubblewrap sandbox (${env.bubblewrap.reason})`
        : `plain subprocess without namespaces because ${env.bubblewrap.reason}`,
      isolation,
      details: {
        bubblewrap: env.bubblewrap.path ?? 'missing',
        cgroup: env.cgroups.version ?? `none (${env.cgroups.reason})`,
        state_dir: this.stateDir,
      },
    };
  }

  async run(input: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const spec = parseCellSpec(input);
    if (spec.image !== '') {
      throw new InputError(`the host provider runs on the host's own root filesystem and takes no image (got "${spec.image}"); drop --image or use --provider docker`);
    }
    const worktree = spec.worktree === undefined
      ? null
      : spec.capture_diff ? (await inspectWorktree(spec.worktree)) : { top: requireDirectory(spec.worktree), gitMetadata: null };
    const env = await this.probe();
    if (this.mode === 'require' && !env.bubblewrap.usable) throw new Error(env.bubblewrap.reason);

    const cellId = newCellId();
    const cellDir = join(this.stateDir, 'cells', cellId);
    mkdirSync(cellDir, { recursive: true });
    const logPath = join(cellDir, 'output.log');

    let cgroup: CellCgroup | null = null;
    let cgroupReport: CgroupReport = cgroupCapability(env.cgroups);
    if (env.cgroups.version) {
      try {
        cgroup = env.cgroups.create(cellId, spec.limits);
        cgroupReport = cgroup.report;
      } catch (e) {
        cgroupReport = { ...emptyCgroup(), reason: `could not create the cell's cgroup: ${(e as Error).message.split('\n')[0]}` };
      }
    }

    const rlimits = planRlimits(spec, {
      cores: availableParallelism(),
      cgroupMemory: cgroup !== null,
      cgroupPids: cgroup !== null,
      uidProcessCount: cgroup ? 0 : countProcessesOfUid(process.getuid?.() ?? 0),
      hardLimits: env.hardLimits,
    });
    const launch = rlimitLaunch(rlimits);
    const argv = typeof spec.cmd === 'string' ? ['/bin/sh', '-c', spec.cmd] : spec.cmd;
    const useBwrap = env.bubblewrap.usable && env.bubblewrap.path !== null;
    const shareNet = spec.allow_net !== false;

    let plainScratch: string | null = null;
    let command: string[];
    let cellEnv: Record<string, string>;
    let cwd: string;
    if (useBwrap) {
      const gitMetadata = worktree?.gitMetadata && exists(worktree.gitMetadata) ? worktree.gitMetadata : null;
      command = [env.bubblewrap.path!, ...buildBubblewrapArgs({ layout: env.layout, worktree: worktree?.top ?? null, gitMetadata, shareNet, argv })];
      cellEnv = buildCellEnvironment(this.env, CELL_HOME, '/tmp', spec.env);
      cwd = '/';
    } else {
      plainScratch = mkdtempSync(join(tmpdir(), `forge-${cellId}-`));
      for (const d of ['home', 'tmp', 'work']) mkdirSync(join(plainScratch, d));
      command = argv;
      cellEnv = buildCellEnvironment(this.env, join(plainScratch, 'home'), join(plainScratch, 'tmp'), spec.env);
      cwd = worktree?.top ?? join(plainScratch, 'work');
    }

    const isolation = this.describeIsolation(env, shareNet, cgroupReport, rlimits);
    const collector = new BoundedOutputCollector(logPath, spec.limits.log_bytes);
    const started = Date.now();
    let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let killReason: 'timeout' | 'output' | 'cancel' | null = null;

    const child = spawn(
      '/bin/sh',
      ['-c', launcherScript(launch.ulimitScript), 'forge-cell', ...(cgroup?.procsFiles ?? []), '--', ...launch.prefix, ...command],
      { cwd, env: cellEnv, stdio: ['ignore', 'pipe', 'ignore'], detached: true },
    );

    const killTree = () => {
      if (child.pid !== undefined) {
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* group already gone */ }
      }
      void cgroup?.killAll();
    };
    const terminate = (reason: 'timeout' | 'output' | 'cancel') => {
      if (killReason || exited) return;
      killReason = reason;
      killTree();
    };

    const streamClosed = new Promise<void>((resolve) => child.stdout!.on('close', () => resolve()));
    child.stdout!.on('data', (chunk: Buffer) => {
      collector.push(chunk);
      options.onOutput?.(chunk);
      if (spec.limits.output_bytes > 0 && collector.totalBytes > spec.limits.output_bytes) terminate('output');
    });
    const timer = setTimeout(() => terminate('timeout'), spec.timeout_s * 1000);
    const onAbort = () => terminate('cancel');
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort);

    try {
      const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
        child.once('error', reject);
        child.once('exit', (code, signal) => resolve({ code, signal }));
      });
      exited = ended;
      const duration = Date.now() - started;
      // The command is over: anything it left behind (daemons, background jobs) dies with the
      // cell. Under bubblewrap the kernel already killed the pid namespace with its init.
      if (!useBwrap) {
        if (child.pid !== undefined) {
          try { process.kill(-child.pid, 'SIGKILL'); } catch { /* nothing left */ }
        }
        if (cgroup) await cgroup.killAll();
      }
      await Promise.race([streamClosed, delay(2000)]);
      child.stdout!.destroy();

      const events = cgroup?.events() ?? { oomKills: 0, pidsLimitHits: 0 };
      const summary = collector.finish();
      const exitCode = ended.code ?? 128 + signalNumber(ended.signal);
      const signalName = ended.code === null ? ended.signal : exitCode > 128 && exitCode < 160 ? signalNameOf(exitCode - 128) : null;
      const limitsHit: CellResult['limits_hit'] = [];
      if (events.oomKills > 0) limitsHit.push('memory');
      if (events.pidsLimitHits > 0) limitsHit.push('pids');
      if (killReason === 'output') limitsHit.push('output');
      if (signalName === 'SIGXCPU') limitsHit.push('cpu_time');
      const killedBy: KilledBy | null = decideKilledBy({
        killReason, oomKills: events.oomKills, pidsLimitHits: events.pidsLimitHits, exitCode, signal: signalName,
      });

      let diff: CellResult['diff'] = null;
      if (worktree && spec.capture_diff) diff = await captureWorktreeDiff(worktree.top);

      return {
        cell_id: cellId,
        provider: 'host',
        image: '',
        exit_code: exitCode,
        signal: signalName,
        timed_out: killReason === 'timeout',
        killed_by: killedBy,
        limits_hit: limitsHit,
        duration_ms: duration,
        output: summary.output,
        output_truncated: summary.truncated,
        output_bytes: summary.totalBytes,
        full_output_path: logPath,
        diff,
        isolation,
        labels: spec.labels,
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      collector.finish();
      if (!exited) killTree();
      // Removing the group waits for the dying processes to leave it; the result need not wait.
      if (cgroup) this.track(cgroup.remove());
      if (plainScratch) rmSync(plainScratch, { recursive: true, force: true });
    }
  }

  private describeIsolation(env: Environment, shareNet: boolean, cgroup: CgroupReport, rlimits: IsolationReport['rlimits'] | null): IsolationReport {
    const warnings: string[] = [];
    const rl = rlimits ?? { cpu_s: null, as_bytes: null, nproc: null, fsize_bytes: null, nofile: null };
    if (!cgroup.version) warnings.push(`no cgroup limits (${cgroup.reason}): memory is capped by the address-space rlimit only and a fork bomb by RLIMIT_NPROC only`);
    if (env.bubblewrap.usable) {
      if (shareNet) warnings.push('allow_net shares the host network: the host provider cannot filter by host name');
      return {
        mechanism: 'bubblewrap',
        degraded: !cgroup.version,
        namespaces: shareNet ? SANDBOX_NAMESPACES : [...SANDBOX_NAMESPACES, 'net'],
        net: shareNet ? 'host' : 'none',
        filesystem: 'read-only host root; worktree read-write (its .git read-only); private /tmp and HOME; home directories, /run and secret files hidden',
        masked_paths: [...env.layout.tmpfsMasks, ...env.layout.nullMasks],
        rlimits: rl,
        cgroup,
        warnings,
      };
    }
    warnings.unshift(
      `NOT SANDBOXED: ${env.bubblewrap.reason}. Commands run as plain subprocesses with the runner's user rights: they can read and write anything that user can, and reach the network.`,
    );
    return {
      mechanism: 'plain-subprocess',
      degraded: true,
      namespaces: [],
      net: 'host',
      filesystem: "the whole host filesystem with the runner's user rights; private HOME and TMPDIR directories",
      masked_paths: [],
      rlimits: rl,
      cgroup,
      warnings,
    };
  }
}

/** FORGE_BUBBLEWRAP=require makes a missing bubblewrap an error instead of a fallback. */
function bubblewrapModeFrom(value: string | undefined): BubblewrapMode {
  if (value === undefined || value === '' || value === 'auto') return 'auto';
  if (value === 'require' || value === 'off') return value;
  throw new InputError(`FORGE_BUBBLEWRAP=${value}: expected auto, require or off`);
}

function cgroupCapability(support: CgroupSupport): CgroupReport {
  return support.version
    ? { version: support.version, memory_max_bytes: null, pids_max: null, cpu_quota_cores: null, reason: support.cpu ? null : 'no cpu controller: --cpus is not enforced' }
    : { ...emptyCgroup(), reason: support.reason };
}

function emptyCgroup(): CgroupReport {
  return { version: null, memory_max_bytes: null, pids_max: null, cpu_quota_cores: null, reason: null };
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

function countProcessesOfUid(uid: number): number {
  let n = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (statSync(join('/proc', entry)).uid === uid) n++;
    } catch { /* exited meanwhile */ }
  }
  return n;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());


function signalNumber(signal: NodeJS.Signals | null): number {
  return signal ? (osConstants.signals[signal] ?? 0) : 0;
}

function signalNameOf(n: number): string | null {
  for (const [name, num] of Object.entries(osConstants.signals)) if (num === n) return name;
  return null;
}
