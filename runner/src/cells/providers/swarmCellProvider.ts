import { dedicatedCellUser } from '../../hostguard/cellUser.js';
import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import type { CellSpecInput } from '../../protocol/cellSpec.js';
import type { CellResult } from '../../protocol/cellResult.js';
import type { ProviderHealth } from '../../protocol/health.js';
import type { IsolationReport } from '../../protocol/isolation.js';
import { InputError } from '../../protocol/inputError.js';
import type { WorktreeSource } from '../../workspace/captureWorktreeDiff.js';
import { newCellId, runnerStateDir } from '../cellIdentity.js';
import { prepareCellWorktree, vetCellMounts } from '../cellWorktree.js';
import { DOCKER_WORKDIR, LABEL_CELL } from '../dockerContainerSpec.js';
import { runCellLifecycle } from '../cellLifecycle.js';
import { type CellProvider, type CellRunOptions, parseCellSpec } from '../provider.js';
import { findBusybox } from '../qemu/guestImage.js';
import { engineUlimits, type HardLimits, parseProcLimits, planRlimits } from '../rlimits.js';
import { buildCellScript, type ReturnedFrame } from '../swarm/swarmCellScript.js';
import type { CellWorktree } from '../../workspace/inspectWorktree.js';
import {
  buildSwarmServiceSpec,
  judgeTasks,
  parseRegistry,
  SWARM_WRAPPER_CAPABILITIES,
  swarmCellLabels,
  type TaskView,
} from '../swarm/swarmServiceSpec.js';
import { FRAME_IDLE_MS, FrameCollector, nextFrameWaitStep } from '../swarm/frameArrival.js';
import { applyReturnedChanges, type CellInputState, cellInputTar, recordCellInput } from '../swarm/swarmTransfer.js';
import { writeTar } from '../swarm/tarArchive.js';
import { type DependencySource, leftOutWarnings } from '../swarm/dependencyLayer.js';
import { isInside } from '../../hostguard/pathInside.js';
import { connectSwarmManager } from '../swarm/swarmManager.js';
import { type InputImage, RegistryImages } from '../swarm/registryImages.js';
import { SwarmUnavailableError } from '../swarm/swarmUnavailable.js';

export interface SwarmCellProviderOptions {
  /** The manager: unix:///path, tcp://host:port (TLS with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH) or ssh://user@host; default DOCKER_HOST. */
  dockerHost?: string;
  /** HOST:PORT of the registry the nodes pull base images from; default FORGE_SWARM_REGISTRY. */
  registry?: string;
  /** Swarm placement constraints every cell gets (e.g. node.labels.forge==cells); default none. */
  constraints?: string[];
  stateDir?: string;
  env?: NodeJS.ProcessEnv;
}

/** The cluster cannot take cells (no manager, registry down): one line that says what to do. */
export { SwarmUnavailableError };

/** A cell's task was lost with its node: the cell may run once more elsewhere. */
class NodeLostError extends Error {
  constructor(
    readonly nodeId: string | null,
    readonly reason: string,
  ) {
    super(`swarm node lost: ${reason}`);
  }
}

const MiB = 1024 * 1024;
/** Swarm refuses configs over 500 KB: larger changes travel as an image layer. */
const MAX_CONFIG_BYTES = 500 * 1024;
/** Most bytes of an attempt's changes (as a tar archive) one swarm cell takes. */
const MAX_INPUT_BYTES = 256 * MiB;
/**
 * The cell user's id inside the task (its group is the same number: the wrapper enters both),
 * decided where host cells decide theirs (FORGE_CELL_UID, default 65532).
 */
const cellUid = (): number => dedicatedCellUser(process.env).uid;
const POLL_MS = 250;

/** The fields of Engine API nodes and tasks this provider reads. */
interface SwarmNode {
  ID?: string;
  Spec?: { Role?: string; Availability?: string };
  Description?: { Hostname?: string; Resources?: { NanoCPUs?: number; MemoryBytes?: number }; Engine?: { EngineVersion?: string } };
  Status?: { State?: string; Addr?: string };
}

interface SwarmTask {
  CreatedAt?: string;
  NodeID?: string;
  Status?: { State?: string; Err?: string; ContainerStatus?: { ExitCode?: number; ContainerID?: string } };
}

interface Handle {
  tryNo: number;
  nonce: string;
  serviceId: string | null;
  created: { configs: string[]; secrets: string[] };
  /** The task's stderr: the wrapper's frame. */
  frames: FrameCollector;
  /** When the last byte of the task's log arrived (stdout or stderr). */
  lastByteAt: number;
  stdoutBytes: number;
  heldByte: Buffer | null;
  /** Its node went away: no use waiting for the task to be removed there. */
  lost: boolean;
  /** The runner ended it (timeout, cancel, output cap): never a lost node. */
  killed: boolean;
  lostReason: string | null;
  logsEnded: Promise<void>;
  logStream: NodeJS.ReadableStream | null;
  nodeId: string | null;
  output: (chunk: Buffer) => void;
  finished: () => boolean;
}

interface Waited {
  exitCode: number | null;
  removed: boolean;
}

/**
 * Cells as one-task Swarm jobs: Swarm places, queues and runs them on the cluster's nodes;
 * the runner ships the base tree as an image layer through the registry and each attempt's
 * changes as a config, and reads the result back from the task's framed output.
 */
export class SwarmCellProvider implements CellProvider {
  readonly name = 'swarm' as const;
  private readonly docker: Docker;
  private readonly env: NodeJS.ProcessEnv;
  private readonly stateDir: string;
  private readonly logDir: string;
  private readonly registryRaw: string | undefined;
  private readonly constraints: string[];
  private readonly managerName: string;
  private readonly cleanups = new Set<Promise<void>>();
  /** Images in the registry this provider's cells use, by tag: what it verified or built. */
  private readonly images: RegistryImages;
  private nodeNames = new Map<string, { name: string; state: string }>();
  private nodesFetched = 0;
  private hardLimits: HardLimits | null = null;

  constructor(options: SwarmCellProviderOptions = {}) {
    this.env = options.env ?? process.env;
    const manager = connectSwarmManager(options.dockerHost, this.env);
    this.docker = manager.docker;
    this.managerName = manager.name;
    this.registryRaw = options.registry ?? this.env.FORGE_SWARM_REGISTRY;
    this.constraints = options.constraints ?? [];
    this.stateDir = options.stateDir ?? runnerStateDir(this.env);
    this.logDir = join(this.stateDir, 'cells');
    this.images = new RegistryImages(this.docker, this.stateDir, (registry, path) => this.registryUrl(registry, path), cellUid);
  }

  async drain(): Promise<void> {
    while (this.cleanups.size > 0) await Promise.all([...this.cleanups]);
  }

  private track(work: Promise<unknown>): void {
    const p: Promise<void> = work
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => this.cleanups.delete(p));
    this.cleanups.add(p);
  }

  private registry(): string {
    try {
      return parseRegistry(this.registryRaw);
    } catch (e) {
      throw new InputError((e as Error).message);
    }
  }

  private registryUrl(registry: string, path: string): string {
    // Loopback registries speak plain HTTP (engines trust them without TLS); others HTTPS.
    const plain = /^(127\.|localhost(:|$))/.test(registry) || this.registryRaw?.startsWith('http://');
    return `${plain ? 'http' : 'https'}://${registry}${path}`;
  }

  private async checkRegistry(registry: string): Promise<void> {
    try {
      const r = await fetch(this.registryUrl(registry, '/v2/'), { signal: AbortSignal.timeout(5000) });
      // 401: a registry that wants credentials answers too (the nodes' engines hold them).
      if (!r.ok && r.status !== 401) throw new Error(`HTTP ${r.status}`);
    } catch (e) {
      throw new SwarmUnavailableError(
        `the registry ${registry} does not answer (${(e as Error).message}); start it (scripts/swarm-cluster.sh up) or pass --registry HOST:PORT`,
      );
    }
  }

  async health(): Promise<ProviderHealth> {
    const unavailable = (reason: string, details: Record<string, string> = {}): ProviderHealth => ({
      provider: 'swarm',
      available: false,
      reason,
      isolation: null,
      details,
    });
    let info: { Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean; NodeID?: string } };
    try {
      info = (await this.docker.info()) as typeof info;
    } catch (e) {
      return unavailable(
        `no Docker Engine answers at ${this.managerName} (${(e as Error).message.split('\n')[0]}); point --docker-host / DOCKER_HOST at a swarm manager`,
      );
    }
    if (info.Swarm?.LocalNodeState !== 'active' || !info.Swarm.ControlAvailable)
      return unavailable(
        `the engine at ${this.managerName} is not a swarm manager (swarm ${info.Swarm?.LocalNodeState ?? 'unknown'}); run docker swarm init, or scripts/swarm-cluster.sh up for a local cluster`,
      );
    const details: Record<string, string> = { manager: this.managerName };
    const nodes = await this.docker.listNodes();
    let usable = 0;
    for (const n of nodes as SwarmNode[]) {
      const res = n.Description?.Resources;
      const state = n.Status?.State ?? 'unknown';
      const availability = n.Spec?.Availability ?? 'unknown';
      if (state === 'ready' && availability === 'active') usable++;
      details[`node ${nodeLabel(n)}`] = [
        state,
        availability,
        n.Spec?.Role ?? '?',
        `${((res?.NanoCPUs ?? 0) / 1e9).toFixed(1)} CPUs`,
        `${((res?.MemoryBytes ?? 0) / 1024 / MiB).toFixed(1)} GiB`,
        `engine ${n.Description?.Engine?.EngineVersion ?? '?'}`,
        `isolation: container with capabilities dropped, links taken down inside the task, command as uid ${cellUid()} with no_new_privs`,
      ].join(', ');
    }
    let registry: string;
    try {
      registry = this.registry();
      await this.checkRegistry(registry);
      details.registry = `${registry} answers`;
    } catch (e) {
      details.registry = (e as Error).message;
      return unavailable((e as Error).message, details);
    }
    if (!findBusybox()) return unavailable('swarm cells need a static busybox on the runner: apt-get install busybox-static', details);
    if (usable === 0) return unavailable('no swarm node is ready and active', details);
    return {
      provider: 'swarm',
      available: true,
      reason: `swarm of ${nodes.length} node(s), ${usable} ready and active; registry ${registry}`,
      isolation: this.describeIsolation(null, null),
      details,
    };
  }

  /** Swarm cells never get a network in this build: a fix run that needs one is refused up front. */
  async egressRefusal(): Promise<{ why: string; fix: string }> {
    return {
      why: "swarm cells have no network in this build (the runner's egress proxy is not reachable from the nodes)",
      fix: 'use --provider docker or qemu',
    };
  }

  async run(input: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const spec = parseCellSpec(input);
    if (spec.image === '') throw new InputError('the swarm provider needs an image; pass --image IMG (see forge-runner bake)');
    if (spec.allow_net !== false)
      throw new InputError(
        'swarm cells have no network in this build; drop --allow-net or use --provider docker for cells that need the egress proxy',
      );
    const registry = this.registry();
    const busybox = findBusybox();
    if (!busybox) throw new InputError('swarm cells need a static busybox on the runner: apt-get install busybox-static');
    // A diff needs the worktree's git data; the base tree travels from it, so it is resolved either way.
    const { worktree } = await prepareCellWorktree({ worktree: spec.worktree, capture_diff: true }, this.env, this.stateDir);
    const plan = vetCellMounts(spec, worktree, () => DOCKER_WORKDIR, { env: this.env, stateDir: this.stateDir });
    const workdir = plan.worktree?.target ?? DOCKER_WORKDIR;
    await this.checkRegistry(registry);
    const src = worktree?.source ?? null;
    const state = src ? await recordCellInput(src) : null;
    const inputTar = src && state ? await cellInputTar(src, state) : writeTar([]);
    if (inputTar.length > MAX_INPUT_BYTES)
      throw new InputError(
        `the attempt's changes are ${inputTar.length} bytes as a tar archive; a swarm cell takes at most ${MAX_INPUT_BYTES}: commit them or use --provider docker`,
      );
    const script = buildCellScript(spec, workdir, null);
    // Installed dependencies inside the worktree travel as a layer; elsewhere the task's own
    // tmpfs (/tmp) would cover them: those are named, not sent. Each is read at the path the
    // spec names (the walk refuses one that passes through a link), not where a link leads.
    const named = new Map(spec.shared_deps.map((d) => [d.target, d.source]));
    const deps = plan.deps
      .filter((d) => isInside(d.target, workdir))
      .map((d) => ({ source: named.get(d.target) ?? d.source, target: d.target }));
    const unsent = plan.deps.filter((d) => !isInside(d.target, workdir)).map((d) => d.target);
    const depsWalk = deps.length > 0 ? await this.images.dependencyKey(deps) : null;
    const retries: { node: string; reason: string }[] = [];
    const avoid: string[] = [];
    // Changes too large for a config: one image over the base, shared by a resubmission, removed after.
    const inputImage: { ref: Promise<InputImage> | null } = { ref: null };
    try {
      const result = await this.runTries(
        spec,
        options,
        {
          worktree,
          src,
          state,
          workdir,
          inputTar,
          script,
          registry,
          busybox,
          inputImage,
          imageWarnings: [],
          deps,
          depsKey: depsWalk?.fingerprint ?? null,
        },
        retries,
        avoid,
      );
      if (unsent.length > 0)
        result.isolation.warnings.push(
          `shared dependencies outside the worktree are not sent to swarm nodes (${unsent.join(', ')}): bake them into the image`,
        );
      if (depsWalk) result.isolation.warnings.push(...leftOutWarnings(depsWalk.leftOut, (t) => relative(workdir, t) || t));
      return result;
    } finally {
      if (inputImage.ref) {
        // After the cell's own removal (tracked by then): an image a container still uses cannot go.
        const pending = [...this.cleanups];
        const ref = inputImage.ref;
        this.track(Promise.all(pending).then(async () => this.images.removeInputImage(registry, await ref.catch(() => null))));
      }
    }
  }

  private async runTries(
    spec: ReturnType<typeof parseCellSpec>,
    options: CellRunOptions,
    cell: Omit<Parameters<SwarmCellProvider['runOnce']>[2], 'tryNo' | 'avoid' | 'retryAllowed'>,
    retries: { node: string; reason: string }[],
    avoid: string[],
  ): Promise<CellResult> {
    for (let tryNo = 0; ; tryNo++) {
      try {
        let nodeId: string | null = null;
        const result = await this.runOnce(spec, options, { ...cell, tryNo, avoid, retryAllowed: tryNo === 0 }, (id) => (nodeId = id));
        result.node = nodeId ? await this.nodeName(nodeId) : null;
        if (retries.length > 0) {
          result.retries = retries;
          result.isolation.warnings.push(
            `resubmitted after its node was lost: ${retries.map((r) => `${r.node} (${r.reason})`).join('; ')}`,
          );
        }
        return result;
      } catch (e) {
        if (!(e instanceof NodeLostError) || tryNo > 0) throw e;
        retries.push({ node: e.nodeId ? await this.nodeName(e.nodeId) : 'unknown node', reason: e.reason });
        if (e.nodeId) avoid.push(e.nodeId);
      }
    }
  }

  private async runOnce(
    spec: ReturnType<typeof parseCellSpec>,
    options: CellRunOptions,
    cell: {
      worktree: CellWorktree | null;
      src: WorktreeSource | null;
      state: CellInputState | null;
      workdir: string;
      inputTar: Buffer;
      script: string;
      registry: string;
      busybox: string;
      inputImage: { ref: Promise<InputImage> | null };
      /** What the registry held instead of this runner's images (said by every try). */
      imageWarnings: string[];
      deps: DependencySource[];
      /** What a walk of the dependencies sees (dependencyFingerprint); null without any. */
      depsKey: string | null;
      tryNo: number;
      avoid: string[];
      retryAllowed: boolean;
    },
    placed: (nodeId: string) => void,
  ): Promise<CellResult> {
    const cellId = newCellId();
    mkdirSync(this.logDir, { recursive: true });
    const logPath = join(this.logDir, `${cellId}.log`);
    const rl = planRlimits(spec, {
      cores: 1,
      cgroupMemory: true,
      cgroupPids: true,
      uidProcessCount: 0,
      hardLimits: (this.hardLimits ??= parseProcLimits(readFileSync('/proc/self/limits', 'utf8'))),
    });
    const ulimits = engineUlimits(rl);
    const isolation = this.describeIsolation(spec, rl);
    const labels = swarmCellLabels(spec, { cellId, runnerPid: process.pid, runnerHost: hostname() });
    // The installed dependencies are the layer's, not the worktree's: neither sent back nor applied.
    const prune = cell.deps.map((d) => relative(cell.workdir, d.target)).filter((p) => p !== '' && !p.startsWith('..'));
    const docker = this.docker;
    let handle: Handle | null = null;

    return runCellLifecycle(
      { cellId, provider: 'swarm', spec, options, logPath, worktree: cell.worktree, isolation, egress: null, stateDir: this.stateDir },
      {
        start: async (ctx) => {
          const nonce = randomBytes(24).toString('hex');
          const h: Handle = (handle = {
            tryNo: cell.tryNo,
            nonce,
            serviceId: null,
            created: { configs: [], secrets: [] },
            // Bounded: the frame carries at most the return archive (base64) plus the file list.
            frames: new FrameCollector(nonce, 512 * MiB),
            lastByteAt: Date.now(),
            stdoutBytes: 0,
            heldByte: null,
            lost: false,
            killed: false,
            lostReason: null,
            logsEnded: Promise.resolve(),
            logStream: null,
            nodeId: null,
            output: ctx.output,
            finished: ctx.finished,
          });
          const base = await this.images.baseImage(
            spec.image,
            cell.src,
            cell.state?.base ?? null,
            cell.workdir,
            cell.registry,
            cell.busybox,
          );
          const layered = cell.depsKey ? await this.images.dependencyImage(base.ref, cell.deps, cell.depsKey, cell.registry) : null;
          for (const w of [base.warning, layered?.warning]) if (w && !cell.imageWarnings.includes(w)) cell.imageWarnings.push(w);
          // A resubmission says what its first try found in the registry too.
          isolation.warnings.push(...cell.imageWarnings);
          let image = layered?.ref ?? base.ref;
          if (cell.inputTar.length > MAX_CONFIG_BYTES) {
            const under = image;
            cell.inputImage.ref ??= this.images.inputImage(under, cell.inputTar, cell.registry);
            image = (await cell.inputImage.ref).ref;
          }
          const secret = await docker.createSecret({
            Name: `${cellId}-nonce`,
            Labels: labels,
            Data: Buffer.from(h.nonce).toString('base64'),
          });
          h.created.secrets.push(secret.id);
          const scriptCfg = await docker.createConfig({
            Name: `${cellId}-script`,
            Labels: labels,
            Data: Buffer.from(cell.script).toString('base64'),
          });
          h.created.configs.push(scriptCfg.id);
          let input: { id: string; name: string } | null = null;
          if (cell.inputTar.length <= MAX_CONFIG_BYTES) {
            const inputCfg = await docker.createConfig({ Name: `${cellId}-input`, Labels: labels, Data: cell.inputTar.toString('base64') });
            h.created.configs.push(inputCfg.id);
            input = { id: inputCfg.id, name: `${cellId}-input` };
          }
          (h as Handle & { serviceSpec: Docker.CreateServiceOptions }).serviceSpec = buildSwarmServiceSpec(spec, {
            cellId,
            prune,
            image,
            workdir: cell.workdir,
            cellUid: cellUid(),
            runnerPid: process.pid,
            runnerHost: hostname(),
            configs: { script: { id: scriptCfg.id, name: `${cellId}-script` }, input },
            secret: { id: secret.id, name: `${cellId}-nonce` },
            avoidNodes: cell.avoid,
            constraints: this.constraints,
            ulimits,
          });
          return h;
        },
        launch: async (h) => {
          const svc = await docker.createService((h as Handle & { serviceSpec: Docker.CreateServiceOptions }).serviceSpec);
          h.serviceId = svc.id;
          const stream = (await docker
            .getService(svc.id)
            .logs({ follow: true, stdout: true, stderr: true })) as unknown as NodeJS.ReadableStream;
          h.logStream = stream;
          const out = new Writable({
            write(chunk: Buffer, _enc, done) {
              // The last byte is held back: the wrapper ends the stream with a newline of its own.
              h.lastByteAt = Date.now();
              h.stdoutBytes += chunk.length;
              const all = h.heldByte ? Buffer.concat([h.heldByte, chunk]) : chunk;
              h.heldByte = all.subarray(all.length - 1);
              if (all.length > 1) h.output(all.subarray(0, all.length - 1));
              done();
            },
          });
          const err = new Writable({
            write(chunk: Buffer, _enc, done) {
              h.lastByteAt = Date.now();
              h.frames.push(chunk);
              done();
            },
          });
          h.logsEnded = new Promise<void>((resolve) => {
            stream.on('end', resolve);
            stream.on('close', resolve);
            stream.on('error', () => resolve());
          });
          docker.modem.demuxStream(stream, out, err);
        },
        wait: async (h) => {
          for (;;) {
            const tasks = await docker.listTasks({ filters: { service: [h.serviceId!] } }).catch((e: { statusCode?: number }) => {
              if (e.statusCode === 404) return null;
              throw e;
            });
            if (tasks === null) return { exitCode: null, removed: true } satisfies Waited;
            const views: TaskView[] = (tasks as SwarmTask[])
              .sort((a, b) => String(a.CreatedAt).localeCompare(String(b.CreatedAt)))
              .map((t) => {
                const status = t.Status ?? {};
                return {
                  state: status.State ?? 'new',
                  nodeId: t.NodeID ?? null,
                  exitCode: status.ContainerStatus?.ContainerID ? (status.ContainerStatus.ExitCode ?? null) : null,
                  err: status.Err ?? null,
                };
              });
            const last = views.at(-1);
            if (last?.nodeId && h.nodeId !== last.nodeId) {
              h.nodeId = last.nodeId;
              placed(last.nodeId);
            }
            if (last?.nodeId) await this.refreshNodes(false);
            const verdict = judgeTasks(views, (id) => this.nodeNames.get(id)?.state ?? null);
            if (verdict.kind === 'ended') {
              // The log stream follows the service until it is removed: the frame's last line
              // (written after all the command's output) says everything has arrived. It takes as
              // long as its bytes take through the manager: waited for while they keep coming.
              const endedAt = Date.now();
              const arrived = () => {
                const f = this.frameOf(h);
                return f !== null && (f.outputBytes === null || h.stdoutBytes >= f.outputBytes + 1);
              };
              for (;;) {
                if (h.killed || h.finished()) break;
                const facts = { complete: arrived(), idleMs: Date.now() - Math.max(h.lastByteAt, endedAt), nodeState: null };
                let step = nextFrameWaitStep(facts);
                if (step === 'ask-node') {
                  await this.refreshNodes(true);
                  const state = last?.nodeId ? (this.nodeNames.get(last.nodeId)?.state ?? 'gone') : 'unknown';
                  step = nextFrameWaitStep({ ...facts, complete: arrived(), nodeState: state });
                }
                if (step === 'done') break;
                if (step === 'lost') {
                  // The node's engine went away under the task (a stopped dockerd kills its
                  // containers before the manager sees the node down): its result went with it.
                  if (!cell.retryAllowed) {
                    h.lostReason = 'its node went away before the result arrived';
                    break;
                  }
                  h.lost = true;
                  throw new NodeLostError(
                    last?.nodeId ?? null,
                    `the task ended (${last?.state ?? '?'}${last?.err ? `: ${last.err}` : ''}) and its node went away before its result arrived`,
                  );
                }
                if (step === 'give-up') {
                  h.lostReason = `its node is up but sent nothing for ${Math.round(facts.idleMs / 1000)} s; the command is not run again`;
                  break;
                }
                await delay(facts.idleMs < FRAME_IDLE_MS ? 50 : 500);
              }
              return { exitCode: verdict.exitCode, removed: false } satisfies Waited;
            }
            if (verdict.kind === 'lost') {
              // The frame may have arrived before the node went: then the cell is done.
              if (this.frameOf(h)) return { exitCode: this.frameOf(h)!.exitCode, removed: false } satisfies Waited;
              h.lost = true;
              if (cell.retryAllowed) throw new NodeLostError(verdict.nodeId, verdict.reason);
              h.lostReason = verdict.reason;
              return { exitCode: null, removed: false } satisfies Waited;
            }
            if (h.killed || h.finished()) return { exitCode: null, removed: true } satisfies Waited;
            await delay(POLL_MS);
          }
        },
        settle: async (h, waited, facts) => {
          (h.logStream as unknown as { destroy?: () => void } | null)?.destroy?.();
          const frame = facts.killReason ? null : this.frameOf(h);
          // The held byte is the wrapper's closing newline only when everything arrived.
          const complete = frame?.outputBytes != null && h.stdoutBytes >= frame.outputBytes + 1;
          if (h.heldByte && !complete) h.output(h.heldByte);
          h.heldByte = null;
          if (frame?.outputBytes != null && !complete)
            facts.isolation.warnings.push(
              `output incomplete: ${Math.max(0, h.stdoutBytes - 1)} of the ${frame.outputBytes} bytes the command wrote arrived from the node`,
            );
          if (!frame) {
            if (!facts.killReason)
              facts.isolation.warnings.push(
                `the swarm task ended without its result frame${h.lostReason ? ` (${h.lostReason})` : ''}: exit status unknown, no changes brought back`,
              );
            else if (cell.src)
              facts.isolation.warnings.push(
                'the cell was stopped before it sent its changes back: the worktree is as it was before the cell',
              );
            return { code: facts.killReason ? 137 : 125, signal: null, oomKills: 0, pidsLimitHits: 0 };
          }
          if (frame.failure)
            facts.isolation.warnings.push(`the swarm cell's wrapper failed: ${frame.failure} ${frame.notes.trim()}`.trim());
          if (cell.src && cell.state && !frame.failure) {
            try {
              const applied = await applyReturnedChanges(cell.src, cell.state, frame, prune);
              facts.isolation.warnings.push(...applied.warnings);
            } catch (e) {
              facts.isolation.warnings.push(`the cell's changes could not be brought back: ${(e as Error).message.split('\n')[0]}`);
            }
          }
          (h as Handle & { omitted?: ReturnedFrame['omitted'] }).omitted = frame.omitted;
          void waited;
          return { code: frame.exitCode, signal: null, oomKills: frame.oomKills, pidsLimitHits: 0 };
        },
        kill: async (h) => {
          h.killed = true;
          if (h.serviceId)
            await docker
              .getService(h.serviceId)
              .remove()
              .catch(() => undefined);
        },
        cleanup: (h) => {
          const made = h ?? handle;
          if (!made) return;
          // A stream still following a lost node's task would keep the runner alive.
          (made.logStream as unknown as { destroy?: () => void } | null)?.destroy?.();
          this.track(this.removeCell(made, cellId));
        },
      },
    ).then((result) => {
      const omitted = (handle as (Handle & { omitted?: ReturnedFrame['omitted'] }) | null)?.omitted ?? [];
      if (result.diff && omitted.length > 0) {
        const known = new Set(result.diff.omitted.map((o) => o.path));
        result.diff.omitted.push(...omitted.filter((o) => !known.has(o.path)));
      }
      return result;
    });
  }

  private frameOf(h: Handle): ReturnedFrame | null {
    return h.frames.frame();
  }

  /**
   * Service first, then the configs and the secret it used. drain() waits until the manager
   * lists no task of it and its own engine holds no container of it (a node removes its task
   * containers once it hears the service is gone).
   */
  private async removeCell(h: Handle, cellId: string): Promise<void> {
    if (h.serviceId)
      await this.docker
        .getService(h.serviceId)
        .remove()
        .catch(() => undefined);
    const until = Date.now() + 30_000;
    while (h.serviceId && !h.lost && Date.now() < until) {
      const tasks = (await this.docker.listTasks({ filters: { name: [cellId] } }).catch(() => [])) as SwarmTask[];
      const containers = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_CELL}=${cellId}`] } }).catch(() => []);
      if (tasks.length === 0 && containers.length === 0) break;
      await delay(250);
    }
    for (const id of h.created.configs) await removeWithRetry(() => this.docker.getConfig(id).remove());
    for (const id of h.created.secrets) await removeWithRetry(() => this.docker.getSecret(id).remove());
  }

  private async refreshNodes(force: boolean): Promise<void> {
    if (!force && Date.now() - this.nodesFetched < 1000) return;
    this.nodesFetched = Date.now();
    const nodes = (await this.docker.listNodes().catch(() => [])) as SwarmNode[];
    const next = new Map<string, { name: string; state: string }>();
    for (const n of nodes) if (n.ID) next.set(n.ID, { name: nodeLabel(n), state: n.Status?.State ?? 'unknown' });
    this.nodeNames = next;
  }

  private async nodeName(id: string): Promise<string> {
    if (!this.nodeNames.has(id)) await this.refreshNodes(true);
    return this.nodeNames.get(id)?.name ?? id;
  }

  private describeIsolation(spec: ReturnType<typeof parseCellSpec> | null, rlimits: IsolationReport['rlimits'] | null): IsolationReport {
    const limits = spec?.limits;
    return {
      mechanism: 'swarm',
      degraded: false,
      namespaces: ['mount', 'pid', 'ipc', 'uts', 'net', 'cgroup'],
      net: 'none',
      filesystem:
        "image root with the base tree as a layer (container layer discarded with the task); the worktree is a copy on the node (the attempt's changes written in, changed files sent back); private tmpfs /tmp unless the worktree lives there; nothing mounted from the runner; never an engine socket",
      user: `uid ${cellUid()} (the dedicated cell user) with no_new_privs; the wrapper around it is root with only ${SWARM_WRAPPER_CAPABILITIES.join(', ')}`,
      masked_paths: [],
      rlimits: rlimits ?? { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
      cgroup: {
        version: null,
        memory_max_bytes: limits ? limits.memory_mib * MiB : null,
        pids_max: limits ? limits.pids : null,
        cpu_quota_cores: limits?.cpus ?? null,
        reason: "enforced by the node's engine (Swarm resource limits); its cgroup version is the node's",
      },
      warnings: [],
    };
  }
}

function nodeLabel(n: SwarmNode): string {
  // Engines on one machine share a hostname (and reach the manager from one address): the id tells them apart.
  return `${n.Description?.Hostname ?? '?'}/${(n.ID ?? '?').slice(0, 12)}`;
}

/** Swarm lets a config or secret go only once no service names it; the service's removal can take a moment. */
async function removeWithRetry(remove: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 20; i++) {
    try {
      await remove();
      return;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return;
      await delay(250);
    }
  }
}

// Not unref()ed: while a cell is polled these timers may be all that keeps a one-shot runner alive.
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
