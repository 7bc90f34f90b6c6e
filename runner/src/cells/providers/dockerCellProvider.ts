import Docker from 'dockerode';
import { mkdirSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { CellSpecInput } from '../../protocol/cellSpec.js';
import type { CellResult } from '../../protocol/cellResult.js';
import type { ProviderHealth } from '../../protocol/health.js';
import type { IsolationReport } from '../../protocol/isolation.js';
import { InputError } from '../../protocol/inputError.js';
import { newCellId, runnerStateDir } from '../cellIdentity.js';
import { type CellUser, describeCellUser } from '../../hostguard/cellUser.js';
import { prepareCellMounts, prepareCellWorktree } from '../cellWorktree.js';
import { findHostCaBundle } from '../hostCaBundle.js';
import { buildContainerSpec, DOCKER_WORKDIR, LABEL_CELL } from '../dockerContainerSpec.js';
import { type DockerEgress, startDockerEgress, stopDockerEgress } from '../dockerEgress.js';
import { grantEgress, proxyEnv, runCellLifecycle } from '../cellLifecycle.js';
import { type CellProvider, type CellRunOptions, parseCellSpec } from '../provider.js';
import { engineUlimits, planRlimits } from '../rlimits.js';
import { PendingCleanups } from '../pendingCleanups.js';
import { runnerHardLimits } from '../runnerHardLimits.js';

export interface DockerCellProviderOptions {
  /** Engine socket; default DOCKER_HOST (unix://) or /var/run/docker.sock. */
  socketPath?: string;
  stateDir?: string;
  env?: NodeJS.ProcessEnv;
}

const MiB = 1024 * 1024;

/** One-shot containers: created, attached, started, waited for and removed per cell. */
export class DockerCellProvider implements CellProvider {
  readonly name = 'docker' as const;
  private readonly docker: Docker;
  private readonly env: NodeJS.ProcessEnv;
  private readonly stateDir: string;
  private readonly logDir: string;
  private readonly cleanups = new PendingCleanups();
  private egressState: Promise<DockerEgress> | null = null;

  constructor(options: DockerCellProviderOptions = {}) {
    this.env = options.env ?? process.env;
    const socketPath = options.socketPath ?? socketFromDockerHost(this.env.DOCKER_HOST) ?? '/var/run/docker.sock';
    this.docker = new Docker({ socketPath });
    this.stateDir = options.stateDir ?? runnerStateDir(this.env);
    this.logDir = join(this.stateDir, 'cells');
  }

  async drain(): Promise<void> {
    await this.cleanups.drain();
    const egress = this.egressState;
    this.egressState = null;
    if (egress) {
      const e = await egress.catch(() => null);
      if (e) await stopDockerEgress(e);
    }
  }

  /** The egress network and this runner's proxy on its gateway, set up on first use. */
  private egress(): Promise<DockerEgress> {
    this.egressState ??= startDockerEgress(this.docker);
    this.egressState.catch(() => (this.egressState = null));
    return this.egressState;
  }

  async health(): Promise<ProviderHealth> {
    try {
      const [version, info] = await Promise.all([this.docker.version(), this.docker.info() as Promise<Record<string, unknown>>]);
      const cgroupVersion = String(info.CgroupVersion ?? '1') === '2' ? 'v2' : 'v1';
      return {
        provider: 'docker',
        available: true,
        reason: `Docker Engine ${version.Version} (API ${version.ApiVersion}) answers`,
        isolation: this.describeIsolation(cgroupVersion, 'none', null, null),
        details: {
          engine: String(version.Version),
          api: String(version.ApiVersion),
          storage_driver: String(info.Driver ?? 'unknown'),
          cgroup: `${cgroupVersion} (${String(info.CgroupDriver ?? '?')})`,
          socket: String((this.docker.modem as unknown as { socketPath?: string }).socketPath ?? ''),
        },
      };
    } catch (e) {
      return {
        provider: 'docker',
        available: false,
        reason: `no Docker Engine answers (${(e as Error).message.split('\n')[0]}); start dockerd (scripts/ensure-dockerd.sh) or set DOCKER_HOST`,
        isolation: null,
        details: {},
      };
    }
  }

  async run(input: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const spec = parseCellSpec(input);
    if (spec.image === '') throw new InputError('the docker provider needs an image; pass --image IMG (see forge-runner bake)');
    const { worktree, user } = await prepareCellWorktree(spec, this.env, this.stateDir);
    const cellId = newCellId();
    mkdirSync(this.logDir, { recursive: true });
    const logPath = join(this.logDir, `${cellId}.log`);
    const rl = planRlimits(spec, {
      cores: availableParallelism(),
      cgroupMemory: true,
      cgroupPids: true,
      uidProcessCount: 0,
      // dockerd usually runs with the same hard limits as the runner; runc cannot exceed them.
      hardLimits: runnerHardLimits(),
    });
    const ulimits = engineUlimits(rl);
    const egress = spec.allow_net === false ? null : await this.egress();
    const grant = grantEgress(egress?.proxy ?? null, cellId, spec);
    const mounts = await prepareCellMounts(spec, worktree, () => DOCKER_WORKDIR, { env: this.env, stateDir: this.stateDir, cellId, user });
    const createOptions = buildContainerSpec(spec, {
      cellId,
      worktree: worktree ? { top: worktree.top, gitMetadata: worktree.gitEntry } : null,
      ...(mounts.plan.worktree ? { worktreeTarget: mounts.plan.worktree.target } : {}),
      deps: mounts.deps.mounts,
      caBundle: (this.caBundle ??= findHostCaBundle(this.env)?.path ?? null),
      uid: user.uid,
      gid: user.gid,
      runnerPid: process.pid,
      runnerHost: hostname(),
      networkMode: egress ? egress.network.name : 'none',
      ...(egress && grant ? { networkEnv: proxyEnv(grant, egress.network.gateway, egress.port) } : {}),
      ulimits,
    });
    const isolation = this.describeIsolation(null, egress ? 'allowlist' : 'none', { spec, rlimits: rl }, user);
    if (user.warning) isolation.warnings.push(user.warning);
    isolation.warnings.push(...mounts.deps.warnings);
    if (egress?.unguarded)
      isolation.warnings.push(`host services on ${egress.network.gateway} are reachable from allow_net cells: ${egress.unguarded}`);

    let container: Docker.Container | null = null;
    let finished: () => boolean = () => false;
    const kill = (c: Docker.Container) => c.kill({ signal: 'SIGKILL' }).catch(() => undefined);

    return runCellLifecycle(
      { cellId, provider: 'docker', spec, options, logPath, worktree, isolation, egress: grant, stateDir: this.stateDir },
      {
        start: async (ctx) => {
          finished = ctx.finished;
          // No image inspection first (a round trip on every cell): the engine's 404 says it.
          const c = (container = await this.docker.createContainer(createOptions).catch((e: unknown) => {
            throw missingImage(e, spec.image) ?? e;
          }));
          const sink = new Writable({
            write(chunk: Buffer, _enc, done) {
              ctx.output(chunk);
              done();
            },
          });
          const stream = await c.attach({ stream: true, stdout: true, stderr: true });
          const streamEnded = new Promise<void>((resolve) => {
            stream.on('end', resolve);
            stream.on('close', resolve);
            stream.on('error', () => resolve());
          });
          // Docker frames stdout and stderr in write order: one sink keeps them interleaved.
          this.docker.modem.demuxStream(stream, sink, sink);
          // 'next-exit': the default 'not-running' would return at once for a created container.
          const waited = c.wait({ condition: 'next-exit' }) as Promise<{ StatusCode: number }>;
          return { container: c, stream, streamEnded, waited };
        },
        launch: async (h) => {
          await h.container.start();
        },
        // The engine's wait answer can get lost under load (seen once in a bench: the container
        // had exited, the wait never returned): inspection backs it up, so a cell always ends.
        wait: (h) => Promise.race([h.waited, exitedByInspection(h.container, finished)]),
        settle: async (h, status) => {
          await Promise.race([h.streamEnded, delay(2000)]);
          (h.stream as unknown as { destroy?: () => void }).destroy?.();
          const state = (await h.container.inspect()).State;
          // The engine reports OOM kills; a refused fork is not observable from outside.
          return { code: status.StatusCode, signal: null, oomKills: state.OOMKilled ? 1 : 0, pidsLimitHits: 0 };
        },
        kill: (h) => kill(h.container).then(() => undefined),
        cleanup: async (h) => {
          const c = container;
          if (!c) {
            await mounts.deps.release();
            return;
          }
          // Created but never handed over (attach failed): the lifecycle could not kill it.
          if (!h) await kill(c);
          // Removal is not on the result's clock; drain() waits for it.
          // The layers go once the container that had them mounted is gone.
          this.cleanups.track(c.remove({ force: true, v: true }).finally(() => mounts.deps.release()));
        },
      },
    );
  }

  private caBundle: string | null | undefined;

  private describeIsolation(
    cgroupVersion: 'v1' | 'v2' | null,
    net: 'none' | 'allowlist',
    cell: { spec: ReturnType<typeof parseCellSpec>; rlimits: IsolationReport['rlimits'] } | null,
    user: CellUser | null,
  ): IsolationReport {
    const limits = cell?.spec.limits;
    return {
      mechanism: 'docker',
      degraded: false,
      namespaces: ['mount', 'pid', 'ipc', 'uts', 'net', 'cgroup'],
      net,
      filesystem:
        "image root (container layer discarded with the cell); worktree read-write at /work or the repository's path (its .git read-only); shared dependencies read-only (writes to a discarded overlay layer); private tmpfs /tmp (nosuid, nodev); never the docker socket",
      user: user
        ? describeCellUser(user)
        : (process.getuid?.() ?? 0) === 0
          ? 'an unprivileged user: the worktree owner, else the dedicated cell user (the runner is root; cells never are)'
          : "the runner's own user",
      masked_paths: [],
      rlimits: cell?.rlimits ?? { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
      cgroup: {
        version: cgroupVersion,
        memory_max_bytes: limits ? limits.memory_mib * MiB : null,
        pids_max: limits ? limits.pids : null,
        cpu_quota_cores: limits?.cpus ?? null,
        reason: null,
      },
      warnings: [],
    };
  }
}

/** Finds containers this and earlier runners created (for gc and the leak check). */
export async function listForgeContainers(docker: Docker): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [LABEL_CELL] } });
}

export function socketFromDockerHost(host: string | undefined): string | null {
  if (!host) return null;
  if (host.startsWith('unix://')) return host.slice('unix://'.length);
  return null;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** The one-line error for a create refused because the image is not in the engine; null for any other failure. */
function missingImage(e: unknown, image: string): InputError | null {
  const err = e as { statusCode?: number; message?: string };
  if (err.statusCode !== 404 || !/no such image/i.test(err.message ?? '')) return null;
  return new InputError(
    `image "${image}" is not in the local Docker engine; build it with forge-runner bake or docker import (no registry is reachable)`,
  );
}

/** Resolves once inspection shows the container stopped (polling slowly: the wait call is the fast path). */
async function exitedByInspection(container: Docker.Container, settled: () => boolean): Promise<{ StatusCode: number }> {
  for (;;) {
    await delay(1000);
    if (settled()) return { StatusCode: -1 }; // the race is over; the value is never read
    const state = await container.inspect().then(
      (i) => i.State,
      () => null,
    );
    if (state && !state.Running && (state.Status === 'exited' || state.Status === 'dead')) return { StatusCode: state.ExitCode };
  }
}
