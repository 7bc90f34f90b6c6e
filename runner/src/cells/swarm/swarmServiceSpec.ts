import { createHash } from 'node:crypto';
import type { CreateServiceOptions } from 'dockerode';
import type { CellSpec } from '../../protocol/cellSpec.js';
import { LABEL_CELL, LABEL_RUN, LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from '../dockerContainerSpec.js';
import { isInside } from '../../hostguard/pathInside.js';
import { CELL_CA_PATH } from '../hostCaBundle.js';
import {
  returnBudgetEnv,
  returnBudgetFor,
  SWARM_BUSYBOX,
  SWARM_CELL_SCRIPT,
  SWARM_INPUT_TAR,
  SWARM_NONCE_SECRET,
  SWARM_WRAPPER,
  wrapperDigest,
} from './swarmCellScript.js';

const MiB = 1024 * 1024;

/** Only what the wrapper needs as root: switch to the cell user and take links down. */
export const SWARM_WRAPPER_CAPABILITIES = ['CAP_SETUID', 'CAP_SETGID', 'CAP_NET_ADMIN'] as const;

/** One file of a task's log on its node (json-file; two are kept). */
export const SWARM_TASK_LOG_MAX_SIZE = '256m';
/** An install step's frame can carry a far larger archive (INSTALL_RETURN_BUDGET). */
export const SWARM_INSTALL_LOG_MAX_SIZE = '640m';

/** The repository in the registry that holds every base image (one tag per image, tree and place). */
export const SWARM_BASE_REPOSITORY = 'forge-cell-base';
/** Where a checkout's installed dependencies travel: an image layer over the base. */
export const SWARM_DEPS_REPOSITORY = 'forge-cell-deps';
/** Where an attempt's changes too large for a Swarm config travel: an image layer over the base. */
export const SWARM_INPUT_REPOSITORY = 'forge-cell-input';

export interface SwarmCellContext {
  cellId: string;
  /** Paths relative to the worktree the task does not send back (installed dependencies). */
  prune?: string[];
  /** The base image as the nodes pull it: registry/repository:tag@digest. */
  image: string;
  workdir: string;
  cellUid: number;
  runnerPid: number;
  runnerHost: string;
  /** input null: the changes are in the image itself (too large for a config). */
  configs: {
    script: { id: string; name: string };
    input: { id: string; name: string } | null;
    /** allow_net: the host's CA bundle, for networks that inspect TLS (as docker cells get it). */
    ca?: { id: string; name: string } | null;
  };
  secret: { id: string; name: string };
  /** Node ids this cell must not be placed on (a node lost by its first try). */
  avoidNodes: string[];
  /** Placement constraints the operator gave for every cell. */
  constraints?: string[];
  ulimits: { Name: string; Soft: number; Hard: number }[];
  /** allow_net: the cell's own overlay and the relay's address on it; null: no network at all. */
  network?: { id: string; relayIp: string } | null;
}

/** Pure: the labels of everything one swarm cell creates (service, configs, secret), which gc reads. */
export function swarmCellLabels(
  spec: Pick<CellSpec, 'labels'>,
  ctx: Pick<SwarmCellContext, 'cellId' | 'runnerPid' | 'runnerHost'>,
): Record<string, string> {
  return {
    [LABEL_CELL]: ctx.cellId,
    [LABEL_RUN]: spec.labels['forge.run'] ?? 'adhoc',
    [LABEL_RUNNER_PID]: String(ctx.runnerPid),
    [LABEL_RUNNER_HOST]: ctx.runnerHost,
  };
}

/**
 * Pure: the service of one swarm cell. One task that never restarts
 * (the runner decides about a retry), reservations equal to the limits so Swarm places it
 * where it fits and queues it when nothing does, no published ports, nothing mounted from
 * the runner (the base tree is in the image, the attempt's changes in a config).
 */
export function buildSwarmServiceSpec(spec: CellSpec, ctx: SwarmCellContext): CreateServiceOptions {
  const labels = swarmCellLabels(spec, ctx);
  const memory = spec.limits.memory_mib * MiB;
  const cpus = spec.limits.cpus !== undefined ? Math.round(spec.limits.cpus * 1e9) : undefined;
  // A worktree below /tmp (a fix run on a repository there) lives in the image: no tmpfs over it.
  const tmpfs = ['/tmp', '/var/tmp']
    .filter((dir) => !isInside(ctx.workdir, dir))
    .map((dir) => ({ Type: 'tmpfs' as const, Source: '', Target: dir, TmpfsOptions: { SizeBytes: memory, Mode: 0o1777 } }));
  return {
    Name: ctx.cellId,
    Labels: labels,
    // Not a replicated job: Engine 20.10 leaves a removed job's tasks and containers behind on
    // the workers, still running when it was killed (moby/moby#42789, #44312). One replica
    // that never restarts runs once the same way, and its removal ends and removes the container.
    Mode: { Replicated: { Replicas: 1 } },
    TaskTemplate: {
      ContainerSpec: {
        Image: ctx.image,
        Labels: labels,
        Command: [SWARM_BUSYBOX, 'sh', SWARM_WRAPPER],
        Args: [],
        Env: [
          `FORGE_WORKDIR=${ctx.workdir}`,
          `FORGE_CELL_UID=${ctx.cellUid}`,
          `FORGE_OUTPUT_LIMIT=${spec.limits.output_bytes}`,
          ...(ctx.prune && ctx.prune.length > 0 ? [`FORGE_PRUNE=${ctx.prune.map((p) => `./${p}`).join('\n')}`] : []),
          // The wrapper keeps only the link that reaches the relay (and checks there is no route out).
          ...(ctx.network ? [`FORGE_NET_RELAY=${ctx.network.relayIp}`] : []),
          ...returnBudgetEnv(returnBudgetFor(spec)),
        ],
        Dir: '/',
        User: '0:0',
        // tini as pid 1: reaps what the command leaves, and a removed service ends the whole tree.
        Init: true,
        TTY: false,
        OpenStdin: false,
        Mounts: tmpfs,
        StopGracePeriod: 0,
        CapabilityDrop: ['ALL'],
        CapabilityAdd: [...SWARM_WRAPPER_CAPABILITIES],
        Ulimits: ctx.ulimits,
        Configs: [
          {
            File: { Name: SWARM_CELL_SCRIPT, UID: '0', GID: '0', Mode: 0o444 },
            ConfigID: ctx.configs.script.id,
            ConfigName: ctx.configs.script.name,
          },
          ...(ctx.configs.input
            ? [
                {
                  File: { Name: SWARM_INPUT_TAR, UID: '0', GID: '0', Mode: 0o400 },
                  ConfigID: ctx.configs.input.id,
                  ConfigName: ctx.configs.input.name,
                },
              ]
            : []),
          ...(ctx.configs.ca
            ? [
                {
                  File: { Name: CELL_CA_PATH, UID: '0', GID: '0', Mode: 0o444 },
                  ConfigID: ctx.configs.ca.id,
                  ConfigName: ctx.configs.ca.name,
                },
              ]
            : []),
        ],
        Secrets: [
          { File: { Name: SWARM_NONCE_SECRET, UID: '0', GID: '0', Mode: 0o400 }, SecretID: ctx.secret.id, SecretName: ctx.secret.name },
        ],
      },
      Resources: {
        Limits: { MemoryBytes: memory, ...(cpus !== undefined ? { NanoCPUs: cpus } : {}), Pids: spec.limits.pids } as {
          MemoryBytes: number;
        },
        Reservations: { MemoryBytes: memory, ...(cpus !== undefined ? { NanoCPUs: cpus } : {}) },
      },
      RestartPolicy: { Condition: 'none', MaxAttempts: 0 },
      ...(ctx.network ? { Networks: [{ Target: ctx.network.id }] } : {}),
      Placement: { Constraints: [...(ctx.constraints ?? []), ...ctx.avoidNodes.map((id) => `node.id!=${id}`)] },
      // The output is streamed through the manager while the task runs; the node keeps a bounded
      // copy. A rotation while the stream follows the file can stop the stream (the result frame,
      // last, would never arrive): one file holds the output of a busy cell as JSON lines.
      LogDriver: {
        Name: 'json-file',
        Options: { 'max-size': spec.capture_diff ? SWARM_TASK_LOG_MAX_SIZE : SWARM_INSTALL_LOG_MAX_SIZE, 'max-file': '2' },
      },
    },
    // On a network, dnsrr: no virtual IP (no IPVS on many nodes) and no load balancer endpoint
    // of the service on the cell's overlay; nothing resolves the cell's name for anyone anyway.
    EndpointSpec: { Mode: ctx.network ? 'dnsrr' : 'vip', Ports: [] },
  };
}

/**
 * Pure: the tag of a base image. Content-addressed by the image the cell names, the tree of
 * the base commit, where the tree sits and the wrapper, so each node pulls one base once.
 */
export function baseImageTag(facts: { imageId: string; treeId: string; workdir: string; cellUid: number }): string {
  return createHash('sha256')
    .update(`${facts.imageId}\0${facts.treeId}\0${facts.workdir}\0${facts.cellUid}\0${wrapperDigest()}`)
    .digest('hex')
    .slice(0, 40);
}

/** Pure: HOST:PORT of a registry, checked; throws a one-line message naming the fix. */
export function parseRegistry(raw: string | undefined): string {
  const value = (raw ?? '')
    .trim()
    .replace(/^https?:\/\//, '')
    .replace(/\/+$/, '');
  if (value === '')
    throw new Error('the swarm provider needs a registry its nodes pull from: pass --registry HOST:PORT or set FORGE_SWARM_REGISTRY');
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$/.test(value))
    throw new Error(`registry "${raw}" is not HOST:PORT (e.g. 127.0.0.1:5000); pass --registry HOST:PORT`);
  return value;
}

/** Pure: how dockerode reaches the manager named by DOCKER_HOST (unix, tcp with or without TLS, ssh). */
export function managerConnection(
  dockerHost: string | undefined,
  tls: { verify: boolean; certPath: string | undefined },
): { socketPath: string } | { protocol: 'http' | 'https' | 'ssh'; host: string; port: number; username?: string; certPath?: string } {
  if (!dockerHost || dockerHost === '') return { socketPath: '/var/run/docker.sock' };
  if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) };
  let url: URL;
  try {
    url = new URL(dockerHost);
  } catch {
    throw new Error(`DOCKER_HOST "${dockerHost}" is not unix:///path, tcp://host:port or ssh://user@host; fix --docker-host`);
  }
  if (url.protocol === 'tcp:' || url.protocol === 'http:' || url.protocol === 'https:') {
    const https = tls.verify || url.protocol === 'https:';
    return {
      protocol: https ? 'https' : 'http',
      host: url.hostname,
      port: Number(url.port || (https ? 2376 : 2375)),
      ...(https && tls.certPath ? { certPath: tls.certPath } : {}),
    };
  }
  if (url.protocol === 'ssh:')
    return { protocol: 'ssh', host: url.hostname, port: Number(url.port || 22), ...(url.username ? { username: url.username } : {}) };
  throw new Error(
    `DOCKER_HOST "${dockerHost}" uses ${url.protocol.replace(':', '')}, which dockerode cannot reach; use unix://, tcp:// or ssh://`,
  );
}

/** Task states after which nothing more happens to a task. */
export const TERMINAL_TASK_STATES = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);

export interface TaskView {
  state: string;
  nodeId: string | null;
  exitCode: number | null;
  err: string | null;
}

export type TaskVerdict =
  | { kind: 'waiting' }
  | { kind: 'running' }
  | { kind: 'ended'; exitCode: number | null }
  | { kind: 'lost'; nodeId: string | null; reason: string };

/**
 * Pure: what a cell's tasks say. A task whose node is down, or that Swarm orphaned or failed
 * without the command's exit, is lost with its node (the cell may run again elsewhere).
 */
export function judgeTasks(tasks: readonly TaskView[], nodeState: (id: string) => string | null): TaskVerdict {
  if (tasks.length === 0) return { kind: 'waiting' };
  const t = tasks[tasks.length - 1]!;
  const down = t.nodeId !== null && ['down', 'unknown', 'disconnected'].includes(nodeState(t.nodeId) ?? 'ready');
  if (!TERMINAL_TASK_STATES.has(t.state)) {
    if (down) return { kind: 'lost', nodeId: t.nodeId, reason: `its node went ${nodeState(t.nodeId!)} while the task was ${t.state}` };
    return t.state === 'running' ? { kind: 'running' } : { kind: 'waiting' };
  }
  if (t.state === 'complete' || (t.state === 'failed' && t.exitCode !== null)) return { kind: 'ended', exitCode: t.exitCode };
  if (t.state === 'orphaned' || down)
    return { kind: 'lost', nodeId: t.nodeId, reason: `the task was ${t.state} (${t.err ?? 'node gone'})` };
  if (t.state === 'rejected')
    return { kind: 'lost', nodeId: t.nodeId, reason: `the node rejected the task (${t.err ?? 'no reason given'})` };
  return { kind: 'ended', exitCode: t.exitCode };
}
