import type { ContainerCreateOptions } from 'dockerode';
import type { CellSpec } from '../protocol/cellSpec.js';
import { caBundleEnv, CELL_CA_PATH } from './hostCaBundle.js';

/** Where the worktree appears inside a docker cell. */
export const DOCKER_WORKDIR = '/work';
export const DOCKER_HOME = '/tmp/forge-home';
const MiB = 1024 * 1024;
/** The private /tmp of a cell; counted against the cell's memory like any tmpfs. */
const TMPFS_OPTIONS = 'rw,nosuid,nodev,exec,mode=1777';

export const LABEL_CELL = 'forge.cell';
export const LABEL_RUN = 'forge.run';
export const LABEL_RUNNER_PID = 'forge.runner.pid';
export const LABEL_RUNNER_HOST = 'forge.runner.host';

export interface DockerCellContext {
  cellId: string;
  /** Host path of the worktree and its .git (file or dir), or null for a scratch cell. */
  worktree: { top: string; gitMetadata: string | null } | null;
  /** Where the cell sees the worktree (the user's repository path in fix runs); default /work. */
  worktreeTarget?: string;
  /** The host's CA bundle, mounted read-only at CELL_CA_PATH with the variables clients read. */
  caBundle?: string | null;
  /** Shared dependencies: read-only, or writable when the source is a discarded overlay layer. */
  deps?: { source: string; target: string; writable: boolean }[];
  uid: number;
  gid: number;
  runnerPid: number;
  runnerHost: string;
  /** Network mode: "none", or the internal network of the egress proxy. */
  networkMode: string;
  /** Added after spec.env: the proxy settings of an allow_net cell. */
  networkEnv?: Record<string, string>;
  ulimits: { Name: string; Soft: number; Hard: number }[];
}

/** Pure: the create options of one cell's container. */
export function buildContainerSpec(spec: CellSpec, ctx: DockerCellContext): ContainerCreateOptions {
  // No PATH: the engine keeps the image's own (or its default), as `docker run` does; the
  // runner's PATH means nothing inside. A spec may still set one.
  const env: Record<string, string> = {
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    CI: 'true',
    PYTHONDONTWRITEBYTECODE: '1',
    HOME: DOCKER_HOME,
    TMPDIR: '/tmp',
    ...(ctx.caBundle ? caBundleEnv(CELL_CA_PATH) : {}),
    ...spec.env,
    ...ctx.networkEnv,
  };
  const binds: string[] = [];
  // Where test tools write scratch (tempfile, some caches), writable by the cell user as on a real machine.
  const tmpfs: Record<string, string> = { '/tmp': TMPFS_OPTIONS, '/var/tmp': TMPFS_OPTIONS };
  const workdir = ctx.worktree ? (ctx.worktreeTarget ?? DOCKER_WORKDIR) : DOCKER_WORKDIR;
  if (ctx.worktree) {
    binds.push(`${ctx.worktree.top}:${workdir}:rw`);
    // Host-side git runs on this worktree after the cell: its metadata stays read-only.
    if (ctx.worktree.gitMetadata) binds.push(`${ctx.worktree.gitMetadata}:${workdir}/.git:ro`);
  } else {
    tmpfs[DOCKER_WORKDIR] = TMPFS_OPTIONS;
  }
  if (ctx.caBundle) binds.push(`${ctx.caBundle}:${CELL_CA_PATH}:ro`);
  for (const d of ctx.deps ?? []) binds.push(`${d.source}:${d.target}:${d.writable ? 'rw' : 'ro'}`);
  const argv = typeof spec.cmd === 'string' ? ['/bin/sh', '-c', spec.cmd] : spec.cmd;
  return {
    name: ctx.cellId,
    Image: spec.image,
    // The entry wrapper merges stderr into stdout inside the container (two pipes to the
    // engine would lose their relative order) and creates HOME (the image may lack it).
    Entrypoint: ['/bin/sh', '-c', 'exec 2>&1; mkdir -p "$HOME" 2>/dev/null; exec "$@"', 'forge-cell'],
    Cmd: argv,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    WorkingDir: workdir,
    User: `${ctx.uid}:${ctx.gid}`,
    Labels: {
      [LABEL_CELL]: ctx.cellId,
      [LABEL_RUN]: spec.labels['forge.run'] ?? 'adhoc',
      [LABEL_RUNNER_PID]: String(ctx.runnerPid),
      [LABEL_RUNNER_HOST]: ctx.runnerHost,
    },
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    OpenStdin: false,
    // Not NetworkDisabled: it leaves /etc/hosts empty, so even "localhost" does not resolve
    // (test servers bind to it); network mode "none" gives loopback only, with a hosts file.
    NetworkDisabled: false,
    HostConfig: {
      Binds: binds,
      Tmpfs: tmpfs,
      NetworkMode: ctx.networkMode,
      Memory: spec.limits.memory_mib * MiB,
      // Equal to Memory: no swap, so a hog is stopped instead of paging.
      MemorySwap: spec.limits.memory_mib * MiB,
      PidsLimit: spec.limits.pids,
      ...(spec.limits.cpus !== undefined ? { NanoCpus: Math.round(spec.limits.cpus * 1e9) } : {}),
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      // tini as pid 1: reaps zombies and forwards signals, so a kill ends the whole tree.
      Init: true,
      Ulimits: ctx.ulimits,
      AutoRemove: false,
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}
