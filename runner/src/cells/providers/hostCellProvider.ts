import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { CellSpec, CellSpecInput } from '../../protocol/cellSpec.js';
import type { CellResult } from '../../protocol/cellResult.js';
import type { ProviderHealth } from '../../protocol/health.js';
import type { CgroupReport, IsolationReport } from '../../protocol/isolation.js';
import { InputError } from '../../protocol/inputError.js';
import { type BubblewrapProbe, findOnPath, probeBubblewrap } from '../bubblewrapProbe.js';
import { newCellId, runnerStateDir } from '../cellIdentity.js';
import { pruneCellLogs } from '../cellLogRetention.js';
import { type CellLauncher, spawnLauncher } from '../cellLauncher.js';
import { type CellCgroup, type CgroupSupport, detectCgroupSupport } from '../cgroup.js';
import { type CellUser, describeCellUser } from '../../hostguard/cellUser.js';
import { caBundleEnv, findHostCaBundle } from '../hostCaBundle.js';
import { EgressProxy } from '../egressProxy.js';
import { type HostCellEgress, openHostCellEgress } from '../hostCellEgress.js';
import { prepareCellWorktree } from '../cellWorktree.js';
import { planBubblewrapCell } from '../host/bubblewrapCellPlan.js';
import type { HostCellPlan } from '../host/hostCellPlan.js';
import { planPlainCell } from '../host/plainCellPlan.js';
import { runCellLifecycle } from '../cellLifecycle.js';
import { type CellProvider, type CellRunOptions, parseCellSpec } from '../provider.js';
import { type HardLimits, planRlimits, ulimitPairs } from '../rlimits.js';
import { PendingCleanups } from '../pendingCleanups.js';
import { runnerHardLimits } from '../runnerHardLimits.js';
import { probeSandboxLayout, realStateDir, type SandboxLayout, withStateDirHidden } from '../sandboxLayout.js';
import type { CellWorktree } from '../../workspace/inspectWorktree.js';

export type BubblewrapMode = 'auto' | 'require' | 'off';

export interface HostCellProviderOptions {
  /** auto: bubblewrap when usable, else a loud plain-subprocess fallback. */
  bubblewrap?: BubblewrapMode;
  stateDir?: string;
  /** The runner's environment; only the allowlist of it reaches a cell. */
  env?: NodeJS.ProcessEnv;
  /**
   * Launchers kept started and joined to a fresh cgroup ahead of need (each used once).
   * 0 for one-shot use such as a single CLI command. Default 1.
   */
  prewarm?: number;
}

const SANDBOX_NAMESPACES = ['mount', 'user', 'pid', 'ipc', 'uts', 'cgroup'];

interface Environment {
  bubblewrap: BubblewrapProbe;
  bash: string | null;
  /** util-linux setpriv: a root runner's cells switch to an unprivileged user with it. */
  setpriv: string | null;
  cgroups: CgroupSupport;
  layout: SandboxLayout;
  hardLimits: HardLimits;
  logDir: string;
}

export class HostCellProvider implements CellProvider {
  readonly name = 'host' as const;
  private readonly mode: BubblewrapMode;
  private readonly env: NodeJS.ProcessEnv;
  private readonly stateDir: string;
  private readonly prewarm: number;
  private environment: Promise<Environment> | null = null;
  private readonly cleanups = new PendingCleanups();
  private readonly warm: CellLauncher[] = [];
  private draining = false;
  /** The egress proxy of this provider's allow_net cells: no TCP listener, one Unix socket per cell. */
  private egressProxy: EgressProxy | null = null;

  constructor(options: HostCellProviderOptions = {}) {
    this.env = options.env ?? process.env;
    this.mode = options.bubblewrap ?? bubblewrapModeFrom(this.env.FORGE_BUBBLEWRAP);
    this.stateDir = options.stateDir ?? runnerStateDir(this.env);
    this.prewarm = options.prewarm ?? 1;
  }

  /** Probed once per provider: bwrap, cgroups and the mask layout do not change mid-run. */
  private probe(): Promise<Environment> {
    this.environment ??= (async () =>
      this.withLogRetention({
        bubblewrap:
          this.mode === 'off'
            ? { usable: false, path: null, version: null, reason: 'bubblewrap disabled by configuration (FORGE_BUBBLEWRAP=off)' }
            : await probeBubblewrap(this.env, ensureDir(this.stateDir)),
        bash: await findOnPath('bash', this.env),
        setpriv: await findOnPath('setpriv', this.env),
        cgroups: detectCgroupSupport(),
        layout: withStateDirHidden(probeSandboxLayout(this.env), realStateDir(ensureDir(this.stateDir))),
        hardLimits: runnerHardLimits(),
        logDir: ensureDir(join(this.stateDir, 'cells')),
      }))();
    return this.environment;
  }

  /** Old cell logs are pruned once per provider, in the background (see cellLogRetention). */
  private withLogRetention(env: Environment): Environment {
    this.cleanups.track(pruneCellLogs(env.logDir).then(() => undefined));
    return env;
  }

  /** Waits for background cleanup of finished cells and retires the prewarmed launchers. */
  async drain(): Promise<void> {
    this.draining = true;
    await new Promise((r) => setImmediate(r));
    const warm = this.warm.splice(0);
    await Promise.all(warm.map((l) => l.dispose()));
    await this.cleanups.drain();
    const proxy = this.egressProxy;
    this.egressProxy = null;
    await proxy?.close();
    this.draining = false;
  }

  async health(): Promise<ProviderHealth> {
    const env = await this.probe();
    if (!env.bash) {
      return {
        provider: 'host',
        available: false,
        reason: 'bash is not on PATH; install bash (the cell launcher needs it)',
        isolation: null,
        details: {},
      };
    }
    if (this.mode === 'require' && !env.bubblewrap.usable) {
      return { provider: 'host', available: false, reason: env.bubblewrap.reason, isolation: null, details: {} };
    }
    const isolation = this.describeIsolation(env, false, cgroupCapability(env.cgroups), null, null);
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

  async egressRefusal(): Promise<{ why: string; fix: string } | null> {
    const env = await this.probe();
    return env.bubblewrap.usable && env.bubblewrap.path !== null ? null : noEgressWithout(env.bubblewrap.reason);
  }

  async run(input: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const spec = parseCellSpec(input);
    if (spec.image !== '') {
      throw new InputError(
        `the host provider runs on the host's own root filesystem and takes no image (got "${spec.image}"); drop --image or use --provider docker`,
      );
    }
    const env = await this.probe();
    if (spec.allow_net !== false && !(env.bubblewrap.usable && env.bubblewrap.path !== null))
      throw new InputError(`allow_net: ${egressRefusalLine(noEgressWithout(env.bubblewrap.reason))}`);
    const { worktree, user } = await prepareCellWorktree(spec, this.env, this.stateDir);
    if (!env.bash) throw new Error('bash is not on PATH; install bash (the cell launcher needs it)');
    if (this.mode === 'require' && !env.bubblewrap.usable) throw new Error(env.bubblewrap.reason);
    const useBwrap = env.bubblewrap.usable && env.bubblewrap.path !== null;
    const dropTo = dropPrivileges(user, env.setpriv);

    const cellId = newCellId();
    const logPath = join(env.logDir, `${cellId}.log`);
    const argv = typeof spec.cmd === 'string' ? ['/bin/sh', '-c', spec.cmd] : spec.cmd;
    // Opened last before the sandbox's arguments; closed in the cell's cleanup, or here if the cell never starts.
    const egress =
      spec.allow_net === false ? null : await this.openEgress(cellId, { allow_net: spec.allow_net, deny_net: spec.deny_net }, dropTo);
    try {
      return await this.runPrepared({ spec, options, env, worktree, user, useBwrap, dropTo, cellId, logPath, argv, egress });
    } catch (e) {
      egress?.grant.proxy.revoke(cellId);
      await egress?.close();
      throw e;
    }
  }

  /** An allow_net cell's own socket on this provider's proxy (made on the first such cell). */
  private openEgress(
    cellId: string,
    net: { allow_net: string[]; deny_net: string[] },
    dropTo: { uid: number; gid: number } | null,
  ): Promise<HostCellEgress> {
    this.egressProxy ??= new EgressProxy('127.0.0.1');
    return openHostCellEgress(this.egressProxy, cellId, net, dropTo);
  }

  private async runPrepared(c: PreparedHostCell): Promise<CellResult> {
    const { spec, env, worktree, user, useBwrap, dropTo, cellId, argv, egress } = c;

    const input = {
      spec,
      worktree,
      user,
      dropTo,
      cellId,
      argv,
      egress,
      hostEnv: this.env,
      stateDir: this.stateDir,
      launcher: (launcherEnv: Record<string, string>, cwd: string, warm: boolean) =>
        (warm ? this.takeWarm() : null) ?? this.startLauncher(env, launcherEnv, cwd),
    };
    const planned = useBwrap
      ? await planBubblewrapCell(input, { bwrap: env.bubblewrap.path!, layout: env.layout, caEnv: this.caEnv(env.layout) })
      : await planPlainCell(input);
    // Released by the cell's cleanup, or here when the cell fails before or after it: once either way.
    let released: Promise<void> | null = null;
    const plan = { ...planned, release: () => (released ??= planned.release()) };
    try {
      return await this.runPlanned(c, plan);
    } catch (e) {
      await plan.release();
      throw e;
    }
  }

  private async runPlanned(c: PreparedHostCell, plan: HostCellPlan): Promise<CellResult> {
    const { spec, options, env, worktree, user, useBwrap, cellId, logPath, egress } = c;
    const { launcher, command } = plan;
    const cgroup = launcher.cgroup;
    let cgroupReport = cgroupCapability(env.cgroups);
    if (cgroup) cgroupReport = cgroup.configure(spec.limits);
    else if (env.cgroups.version) cgroupReport = { ...cgroupReport, reason: 'could not create the cell cgroup' };
    const rlimits = planRlimits(spec, {
      cores: availableParallelism(),
      cgroupMemory: cgroup !== null,
      cgroupPids: cgroup !== null,
      uidProcessCount: cgroup ? 0 : countProcessesOfUid(user.uid),
      hardLimits: env.hardLimits,
    });
    const isolation = this.describeIsolation(env, egress !== null, cgroupReport, rlimits, user);
    if (user.warning) isolation.warnings.push(user.warning);
    isolation.warnings.push(...plan.warnings);
    const child = launcher.child;

    const killTree = () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* group already gone */
        }
      }
      void cgroup?.killAll();
    };

    return runCellLifecycle(
      { cellId, provider: 'host', spec, options, logPath, worktree, isolation, egress: egress?.grant ?? null, stateDir: this.stateDir },
      {
        start: async (ctx) => {
          const streamClosed = new Promise<void>((resolve) => launcher.stdout.on('close', () => resolve()));
          launcher.stdout.on('data', (chunk: Buffer) => ctx.output(chunk));
          const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
            child.once('error', reject);
            child.once('exit', (code, signal) => resolve({ code, signal }));
          });
          return { ended, streamClosed };
        },
        launch: () => launcher.launch(ulimitPairs(rlimits), command),
        wait: ({ ended }) => ended,
        settle: async ({ streamClosed }, status) => {
          // The command is over: anything it left behind (daemons, background jobs) dies with the
          // cell. Under bubblewrap the kernel already killed the pid namespace with its init.
          if (plan.reapLeftovers) {
            if (child.pid !== undefined) {
              try {
                process.kill(-child.pid, 'SIGKILL');
              } catch {
                /* nothing left */
              }
            }
            if (cgroup) await cgroup.killAll();
          }
          await Promise.race([streamClosed, delay(2000)]);
          launcher.stdout.destroy();
          const events = cgroup?.events() ?? { oomKills: 0, pidsLimitHits: 0 };
          return { code: status.code, signal: status.signal, ...events };
        },
        kill: killTree,
        cleanup: async () => {
          // Removing the group waits for the dying processes to leave it; the result need not wait.
          if (cgroup) this.cleanups.track(cgroup.release());
          try {
            await plan.release();
          } finally {
            await egress?.close();
          }
          // Spawning is a synchronous fork of the runner: do it after the caller has its result.
          if (useBwrap && this.prewarm > 0) setImmediate(() => this.refillWarm(env));
        },
      },
    );
  }

  /** The host's CA bundle for clients in the cell, when the cell can see it (not behind a mask). */
  private caEnv(layout: { tmpfsMasks: string[]; nullMasks: string[] }): Record<string, string> {
    const ca = (this.caBundle ??= findHostCaBundle(this.env) ?? false);
    if (!ca || [...layout.tmpfsMasks, ...layout.nullMasks].some((m) => ca.path === m || ca.path.startsWith(`${m}/`))) return {};
    return caBundleEnv(ca.path);
  }

  private caBundle: { path: string } | false | undefined;

  private startLauncher(env: Environment, launcherEnv: Record<string, string>, cwd: string): CellLauncher {
    let cgroup: CellCgroup | null = null;
    if (env.cgroups.version) {
      try {
        cgroup = env.cgroups.create();
      } catch {
        cgroup = null;
      }
    }
    return spawnLauncher({ bash: env.bash!, cgroup, env: launcherEnv, cwd });
  }

  private takeWarm(): CellLauncher | null {
    while (this.warm.length > 0) {
      const l = this.warm.shift()!;
      if (l.idle()) return l;
      this.cleanups.track(l.dispose());
    }
    return null;
  }

  private refillWarm(env: Environment): void {
    if (this.draining) return;
    while (this.warm.length < this.prewarm) this.warm.push(this.startLauncher(env, { PATH: this.env.PATH ?? '' }, '/'));
  }

  private describeIsolation(
    env: Environment,
    egress: boolean,
    cgroup: CgroupReport,
    rlimits: IsolationReport['rlimits'] | null,
    user: CellUser | null,
  ): IsolationReport {
    const warnings: string[] = [];
    const rootRunner = (process.getuid?.() ?? 0) === 0;
    const who = user
      ? describeCellUser(user)
      : rootRunner
        ? 'an unprivileged user: the worktree owner, else the dedicated cell user (the runner is root; cells never are)'
        : "the runner's own user";
    if (rootRunner && !env.setpriv)
      warnings.push('setpriv (util-linux) is missing: a root runner cannot switch cells to an unprivileged user; install util-linux');
    const rl = rlimits ?? { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null };
    if (!cgroup.version)
      warnings.push(
        `no cgroup limits (${cgroup.reason}): memory is capped per process by RLIMIT_DATA only and a fork bomb by RLIMIT_NPROC only` +
          (env.bubblewrap.usable ? '' : '; a process the command detaches from its process group (setsid) can outlive the cell'),
      );
    if (env.bubblewrap.usable) {
      return {
        mechanism: 'bubblewrap',
        degraded: !cgroup.version,
        // A root runner's bwrap makes no user namespace: the command switches to a real unprivileged uid instead.
        namespaces: [...(rootRunner ? SANDBOX_NAMESPACES.filter((n) => n !== 'user') : SANDBOX_NAMESPACES), 'net'],
        // With allow_net the only way out is the cell's socket to the egress proxy.
        net: egress ? 'allowlist' : 'none',
        filesystem:
          "read-only host root (nosuid, nodev); worktree read-write (at the repository's path in fix runs; its .git read-only); shared dependencies read-only (writes to a discarded overlay layer); private /tmp and HOME; home directories, /run and secret files hidden; only descriptors 0-2 are inherited",
        user: who,
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
      filesystem: "the whole host filesystem with the cell user's rights; private HOME and TMPDIR directories",
      user: who,
      masked_paths: [],
      rlimits: rl,
      cgroup,
      warnings,
    };
  }
}

/** What a prepared host cell carries into its run. */
interface PreparedHostCell {
  spec: CellSpec;
  options: CellRunOptions;
  env: Environment;
  worktree: CellWorktree | null;
  user: CellUser;
  useBwrap: boolean;
  dropTo: { uid: number; gid: number; setpriv: string } | null;
  cellId: string;
  logPath: string;
  argv: string[];
  egress: HostCellEgress | null;
}

/**
 * Pure: why a host cell without bubblewrap cannot have allow_net. A plain subprocess shares
 * the host network and every service on it: nothing would keep it to the proxy.
 */
export function noEgressWithout(bubblewrapReason: string): { why: string; fix: string } {
  return {
    why: `host cells without bubblewrap are plain subprocesses on the host network, which nothing can filter (${bubblewrapReason})`,
    fix: 'install bubblewrap, or use --provider docker or qemu',
  };
}

/** Pure: a refusal as one line. */
export function egressRefusalLine(r: { why: string; fix: string }): string {
  return `${r.why}; ${r.fix}`;
}

/** A root runner's cells switch to the unprivileged cell user (never root). */
function dropPrivileges(user: CellUser, setpriv: string | null): { uid: number; gid: number; setpriv: string } | null {
  if ((process.getuid?.() ?? 0) !== 0) return null;
  if (!setpriv)
    throw new Error(
      'the runner is root and setpriv (util-linux) is not on PATH, so cells cannot run as an unprivileged user; install util-linux',
    );
  return { uid: user.uid, gid: user.gid, setpriv };
}

/** FORGE_BUBBLEWRAP=require makes a missing bubblewrap an error instead of a fallback. */
function bubblewrapModeFrom(value: string | undefined): BubblewrapMode {
  if (value === undefined || value === '' || value === 'auto') return 'auto';
  if (value === 'require' || value === 'off') return value;
  throw new InputError(`FORGE_BUBBLEWRAP=${value}: expected auto, require or off`);
}

function cgroupCapability(support: CgroupSupport): CgroupReport {
  return support.version
    ? {
        version: support.version,
        memory_max_bytes: null,
        pids_max: null,
        cpu_quota_cores: null,
        reason: support.cpu ? null : 'no cpu controller: --cpus is not enforced',
      }
    : { version: null, memory_max_bytes: null, pids_max: null, cpu_quota_cores: null, reason: support.reason };
}

function ensureDir(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

function countProcessesOfUid(uid: number): number {
  let n = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (statSync(join('/proc', entry)).uid === uid) n++;
    } catch {
      /* exited meanwhile */
    }
  }
  return n;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
