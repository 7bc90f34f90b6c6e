import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import type { CellSpec } from '../../protocol/cellSpec.js';
import type { IsolationReport } from '../../protocol/isolation.js';
import type { WorktreeSource } from '../../workspace/captureWorktreeDiff.js';
import type { CellDriver, CellExit, CellStartContext, KillReason } from '../cellLifecycle.js';
import { LABEL_CELL } from '../dockerContainerSpec.js';
import { FRAME_IDLE_MS, FrameCollector, nextFrameWaitStep } from './frameArrival.js';
import type { InputImage, RegistryImages } from './registryImages.js';
import { type ReturnedFrame, returnBudgetFor } from './swarmCellScript.js';
import type { DependencySource } from './dependencyLayer.js';
import type { SwarmNodes } from './swarmNodes.js';
import { buildSwarmServiceSpec, judgeTasks, type SwarmCellContext, type TaskView } from './swarmServiceSpec.js';
import { applyReturnedChanges, type CellInputState } from './swarmTransfer.js';

const MiB = 1024 * 1024;
/** Swarm refuses configs over 500 KB: larger changes travel as an image layer. */
export const MAX_CONFIG_BYTES = 500 * 1024;
const POLL_MS = 250;

/** A cell's task was lost with its node: the cell may run once more elsewhere. */
export class NodeLostError extends Error {
  constructor(
    readonly nodeId: string | null,
    readonly reason: string,
  ) {
    super(`swarm node lost: ${reason}`);
  }
}

/** What one swarm cell takes, the same for each try of it. */
export interface SwarmCellInput {
  src: WorktreeSource | null;
  state: CellInputState | null;
  workdir: string;
  /** The attempt's changes as a tar archive: a config when small, else an image layer. */
  inputTar: Buffer;
  script: string;
  registry: string;
  busybox: string;
  /** Changes too large for a config: one image over the base, shared by a resubmission, removed after. */
  inputImage: { ref: Promise<InputImage> | null };
  /** What the registry held instead of this runner's images (said by every try). */
  imageWarnings: string[];
  deps: DependencySource[];
  /** What a walk of the dependencies sees (dependencyFingerprint); null without any. */
  depsKey: string | null;
}

/** One try of a cell on the cluster. */
export interface SwarmTry {
  cellId: string;
  spec: CellSpec;
  cell: SwarmCellInput;
  /** Nodes whose tasks were lost: the task avoids them. */
  avoid: string[];
  /** A lost node may be answered by one more try (the first try only). */
  retryAllowed: boolean;
  /** Worktree paths that are the dependency layer's, neither sent back nor applied. */
  prune: string[];
  labels: Record<string, string>;
  ulimits: SwarmCellContext['ulimits'];
  constraints: string[];
  cellUid: number;
  /** allow_net: the try's own overlay (the relay on it) and its script with the proxy variables. */
  network: { id: string; relayIp: string; script: string; caBundle: Buffer | null } | null;
}

/** The task of one try, as the driver follows it. */
export interface SwarmTaskHandle {
  nonce: string;
  serviceSpec: Docker.CreateServiceOptions;
  serviceId: string | null;
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
  logStream: NodeJS.ReadableStream | null;
  nodeId: string | null;
  /** Paths the wrapper could not send back, for the diff's omitted list. */
  omitted: ReturnedFrame['omitted'];
  output: (chunk: Buffer) => void;
  finished: () => boolean;
  /** Milliseconds since start() at each step of the cell (the bench's breakdown of a cell's time). */
  marks: Record<string, number>;
  startedAt: number;
  /** Resolves once the frame's exit line arrived: wait() need not sleep out its poll. */
  frameEnded: Promise<void>;
  onFrameEnded: () => void;
}

export interface SwarmWaited {
  exitCode: number | null;
  removed: boolean;
}

/** The fields of Engine API tasks this driver reads. */
interface SwarmTask {
  CreatedAt?: string;
  NodeID?: string;
  Status?: { State?: string; Err?: string; ContainerStatus?: { ExitCode?: number; ContainerID?: string } };
}

/**
 * Runs one try of a cell as a one-task Swarm service: its images, secret and configs made,
 * the service created and its log followed, the task judged until it ends (or its node is
 * lost), the frame read and the changes brought back, everything removed after.
 */
export class SwarmTaskDriver implements CellDriver<SwarmTaskHandle, SwarmWaited> {
  /** The handle once start made it (the provider reads what the task could not send back). */
  handle: SwarmTaskHandle | null = null;
  /** What start made on the manager: removed by cleanup even when start failed half way. */
  private readonly created = { configs: [] as string[], secrets: [] as string[] };

  constructor(
    private readonly docker: Docker,
    private readonly images: RegistryImages,
    private readonly nodes: SwarmNodes,
    private readonly t: SwarmTry,
    private readonly isolation: IsolationReport,
    /** Called when the task is placed on a node (again when it moves). */
    private readonly placed: (nodeId: string) => void,
    /** Background work the provider's drain() waits for. */
    private readonly track: (work: Promise<unknown>) => void,
  ) {}

  async start(ctx: CellStartContext): Promise<SwarmTaskHandle> {
    const startedAt = Date.now();
    const { cellId, spec, cell, labels } = this.t;
    const nonce = randomBytes(24).toString('hex');
    const { created } = this;
    const base = await this.images.baseImage(spec.image, cell.src, cell.state?.base ?? null, cell.workdir, cell.registry, cell.busybox);
    const layered = cell.depsKey ? await this.images.dependencyImage(base.ref, cell.deps, cell.depsKey, cell.registry) : null;
    for (const w of [base.warning, layered?.warning]) if (w && !cell.imageWarnings.includes(w)) cell.imageWarnings.push(w);
    // A resubmission says what its first try found in the registry too.
    this.isolation.warnings.push(...cell.imageWarnings);
    let image = layered?.ref ?? base.ref;
    if (cell.inputTar.length > MAX_CONFIG_BYTES) {
      cell.inputImage.ref ??= this.images.inputImage(image, cell.inputTar, cell.registry);
      image = (await cell.inputImage.ref).ref;
    }
    const secret = await this.docker.createSecret({ Name: `${cellId}-nonce`, Labels: labels, Data: Buffer.from(nonce).toString('base64') });
    created.secrets.push(secret.id);
    const scriptCfg = await this.docker.createConfig({
      Name: `${cellId}-script`,
      Labels: labels,
      Data: Buffer.from(this.t.network?.script ?? cell.script).toString('base64'),
    });
    created.configs.push(scriptCfg.id);
    let input: { id: string; name: string } | null = null;
    if (cell.inputTar.length <= MAX_CONFIG_BYTES) {
      const inputCfg = await this.docker.createConfig({ Name: `${cellId}-input`, Labels: labels, Data: cell.inputTar.toString('base64') });
      created.configs.push(inputCfg.id);
      input = { id: inputCfg.id, name: `${cellId}-input` };
    }
    let ca: { id: string; name: string } | null = null;
    if (this.t.network?.caBundle) {
      const caCfg = await this.docker.createConfig({
        Name: `${cellId}-ca`,
        Labels: labels,
        Data: this.t.network.caBundle.toString('base64'),
      });
      created.configs.push(caCfg.id);
      ca = { id: caCfg.id, name: `${cellId}-ca` };
    }
    const serviceSpec = buildSwarmServiceSpec(spec, {
      cellId,
      prune: this.t.prune,
      image,
      workdir: cell.workdir,
      cellUid: this.t.cellUid,
      runnerPid: process.pid,
      runnerHost: hostname(),
      configs: { script: { id: scriptCfg.id, name: `${cellId}-script` }, input, ca },
      secret: { id: secret.id, name: `${cellId}-nonce` },
      avoidNodes: this.t.avoid,
      constraints: this.t.constraints,
      ulimits: this.t.ulimits,
      network: this.t.network,
    });
    this.handle = {
      nonce,
      serviceSpec,
      serviceId: null,
      // Bounded: the frame carries at most the return archive (base64) plus the file list.
      // (base64 of the gzipped archive: an incompressible install archive is 427 MiB of it).
      frames: new FrameCollector(nonce, 512 * MiB, returnBudgetFor(spec)),
      lastByteAt: Date.now(),
      stdoutBytes: 0,
      heldByte: null,
      lost: false,
      killed: false,
      lostReason: null,
      logStream: null,
      nodeId: null,
      omitted: [],
      output: ctx.output,
      finished: ctx.finished,
      marks: {},
      startedAt,
      frameEnded: Promise.resolve(),
      onFrameEnded: () => undefined,
    };
    const h = this.handle;
    h.frameEnded = new Promise<void>((resolve) => (h.onFrameEnded = resolve));
    mark(h, 'prepared');
    return h;
  }

  async launch(h: SwarmTaskHandle): Promise<void> {
    const svc = await this.docker.createService(h.serviceSpec);
    h.serviceId = svc.id;
    mark(h, 'service_created');
    const stream = (await this.docker
      .getService(svc.id)
      .logs({ follow: true, stdout: true, stderr: true })) as unknown as NodeJS.ReadableStream;
    h.logStream = stream;
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        // The last byte is held back: the wrapper ends the stream with a newline of its own.
        h.lastByteAt = Date.now();
        h.marks.first_output ??= h.lastByteAt - h.startedAt;
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
        if (h.frames.ended()) {
          h.marks.frame_ended ??= Date.now() - h.startedAt;
          h.onFrameEnded();
        }
        done();
      },
    });
    this.docker.modem.demuxStream(stream, out, err);
  }

  async wait(h: SwarmTaskHandle): Promise<SwarmWaited> {
    for (;;) {
      const views = await this.taskViews(h);
      if (views === null) return { exitCode: null, removed: true };
      const last = views.at(-1);
      if (last?.nodeId && h.nodeId !== last.nodeId) {
        h.nodeId = last.nodeId;
        this.placed(last.nodeId);
      }
      if (last?.nodeId) await this.nodes.refresh(false);
      const verdict = judgeTasks(views, (id) => this.nodes.state(id));
      if (verdict.kind === 'running') h.marks.task_running ??= Date.now() - h.startedAt;
      // The whole frame is the wrapper's last word (nonce-signed, after all the output): the
      // cell is over, whether or not the manager has heard yet that its task completed.
      const early = frameComplete(h);
      if (early && verdict.kind !== 'lost') {
        mark(h, 'waited');
        return { exitCode: early.exitCode, removed: false };
      }
      if (verdict.kind === 'ended') {
        h.marks.task_ended ??= Date.now() - h.startedAt;
        await this.awaitFrame(h, last);
        mark(h, 'waited');
        return { exitCode: verdict.exitCode, removed: false };
      }
      if (verdict.kind === 'lost') {
        // The frame may have arrived before the node went: then the cell is done.
        const frame = h.frames.frame();
        if (frame) return { exitCode: frame.exitCode, removed: false };
        h.lost = true;
        if (this.t.retryAllowed) throw new NodeLostError(verdict.nodeId, verdict.reason);
        h.lostReason = verdict.reason;
        return { exitCode: null, removed: false };
      }
      if (h.killed || h.finished()) return { exitCode: null, removed: true };
      await Promise.race([delay(POLL_MS), h.frameEnded]);
    }
  }

  /** The service's tasks, oldest first; null once the service is gone. */
  private async taskViews(h: SwarmTaskHandle): Promise<TaskView[] | null> {
    const tasks = await this.docker.listTasks({ filters: { service: [h.serviceId!] } }).catch((e: { statusCode?: number }) => {
      if (e.statusCode === 404) return null;
      throw e;
    });
    if (tasks === null) return null;
    return (tasks as SwarmTask[])
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
  }

  /**
   * The task ended; the log stream follows the service until it is removed: the frame's last
   * line (written after all the command's output) says everything has arrived. It takes as
   * long as its bytes take through the manager: waited for while they keep coming.
   */
  private async awaitFrame(h: SwarmTaskHandle, last: TaskView | undefined): Promise<void> {
    const endedAt = Date.now();
    const arrived = () => frameComplete(h) !== null;
    for (;;) {
      if (h.killed || h.finished()) return;
      const facts = { complete: arrived(), idleMs: Date.now() - Math.max(h.lastByteAt, endedAt), nodeState: null };
      let step = nextFrameWaitStep(facts);
      if (step === 'ask-node') {
        await this.nodes.refresh(true);
        const state = last?.nodeId ? (this.nodes.state(last.nodeId) ?? 'gone') : 'unknown';
        step = nextFrameWaitStep({ ...facts, complete: arrived(), nodeState: state });
      }
      if (step === 'done') return;
      if (step === 'lost') {
        // The node's engine went away under the task (a stopped dockerd kills its
        // containers before the manager sees the node down): its result went with it.
        if (!this.t.retryAllowed) {
          h.lostReason = 'its node went away before the result arrived';
          return;
        }
        h.lost = true;
        throw new NodeLostError(
          last?.nodeId ?? null,
          `the task ended (${last?.state ?? '?'}${last?.err ? `: ${last.err}` : ''}) and its node went away before its result arrived`,
        );
      }
      if (step === 'give-up') {
        h.lostReason = `its node is up but sent nothing for ${Math.round(facts.idleMs / 1000)} s; the command is not run again`;
        return;
      }
      await delay(facts.idleMs < FRAME_IDLE_MS ? 50 : 500);
    }
  }

  async settle(
    h: SwarmTaskHandle,
    _waited: SwarmWaited,
    facts: { killReason: KillReason | null; isolation: IsolationReport },
  ): Promise<CellExit> {
    destroyStream(h);
    const { cell } = this.t;
    const frame = facts.killReason ? null : h.frames.frame();
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
        facts.isolation.warnings.push('the cell was stopped before it sent its changes back: the worktree is as it was before the cell');
      return { code: facts.killReason ? 137 : 125, signal: null, oomKills: 0, pidsLimitHits: 0 };
    }
    if (frame.failure) facts.isolation.warnings.push(`the swarm cell's wrapper failed: ${frame.failure} ${frame.notes.trim()}`.trim());
    if (cell.src && cell.state && !frame.failure) {
      try {
        const applied = await applyReturnedChanges(cell.src, cell.state, frame, this.t.prune);
        facts.isolation.warnings.push(...applied.warnings);
      } catch (e) {
        facts.isolation.warnings.push(`the cell's changes could not be brought back: ${(e as Error).message.split('\n')[0]}`);
      }
    }
    h.omitted = frame.omitted;
    return { code: frame.exitCode, signal: null, oomKills: frame.oomKills, pidsLimitHits: 0 };
  }

  async kill(h: SwarmTaskHandle): Promise<void> {
    h.killed = true;
    if (h.serviceId)
      await this.docker
        .getService(h.serviceId)
        .remove()
        .catch(() => undefined);
  }

  cleanup(h: SwarmTaskHandle | null): void {
    // A stream still following a lost node's task would keep the runner alive.
    if (h) destroyStream(h);
    this.track(this.removeCell(h));
  }

  /**
   * Service first, then the configs and the secret it used. drain() waits until the manager
   * lists no task of it and its own engine holds no container of it (a node removes its task
   * containers once it hears the service is gone).
   */
  private async removeCell(h: SwarmTaskHandle | null): Promise<void> {
    const { cellId } = this.t;
    if (h?.serviceId)
      await this.docker
        .getService(h.serviceId)
        .remove()
        .catch(() => undefined);
    const until = Date.now() + 30_000;
    while (h?.serviceId && !h.lost && Date.now() < until) {
      const tasks = (await this.docker.listTasks({ filters: { name: [cellId] } }).catch(() => [])) as SwarmTask[];
      const containers = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_CELL}=${cellId}`] } }).catch(() => []);
      if (tasks.length === 0 && containers.length === 0) break;
      await delay(250);
    }
    for (const id of this.created.configs) await removeWithRetry(() => this.docker.getConfig(id).remove());
    for (const id of this.created.secrets) await removeWithRetry(() => this.docker.getSecret(id).remove());
  }
}

/** The frame, once it and all the output it counts have arrived; null before. */
function frameComplete(h: SwarmTaskHandle): ReturnedFrame | null {
  const f = h.frames.frame();
  return f !== null && (f.outputBytes === null || h.stdoutBytes >= f.outputBytes + 1) ? f : null;
}

function mark(h: SwarmTaskHandle, step: string): void {
  h.marks[step] ??= Date.now() - h.startedAt;
}

function destroyStream(h: SwarmTaskHandle): void {
  (h.logStream as unknown as { destroy?: () => void } | null)?.destroy?.();
}

/** Swarm lets a config or secret go only once no service names it; the service's removal can take a moment. */
export async function removeWithRetry(remove: () => Promise<unknown>, tries = 20): Promise<void> {
  for (let i = 0; i < tries; i++) {
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
