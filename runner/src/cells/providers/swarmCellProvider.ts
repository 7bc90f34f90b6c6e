import Docker from 'dockerode';
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import { dedicatedCellUser } from '../../hostguard/cellUser.js';
import { isInside } from '../../hostguard/pathInside.js';
import type { CellResult } from '../../protocol/cellResult.js';
import type { CellSpecInput } from '../../protocol/cellSpec.js';
import type { ProviderHealth } from '../../protocol/health.js';
import { InputError } from '../../protocol/inputError.js';
import type { CellWorktree } from '../../workspace/inspectWorktree.js';
import { newCellId, runnerStateDir } from '../cellIdentity.js';
import { grantEgress, proxyEnv, runCellLifecycle } from '../cellLifecycle.js';
import { prepareCellWorktree, vetCellMounts } from '../cellWorktree.js';
import { DOCKER_WORKDIR } from '../dockerContainerSpec.js';
import { type CellProvider, type CellRunOptions, parseCellSpec } from '../provider.js';
import { findBusybox } from '../qemu/guestImage.js';
import { engineUlimits, planRlimits } from '../rlimits.js';
import { PendingCleanups } from '../pendingCleanups.js';
import { runnerHardLimits } from '../runnerHardLimits.js';
import { leftOutWarnings } from '../swarm/dependencyLayer.js';
import { type InputImage, RegistryImages } from '../swarm/registryImages.js';
import { buildCellScript } from '../swarm/swarmCellScript.js';
import { type CellNetwork, RELAY_PORT, SwarmEgressRelay } from '../swarm/swarmEgressRelay.js';
import { describeSwarmIsolation } from '../swarm/swarmIsolation.js';
import { connectSwarmManager } from '../swarm/swarmManager.js';
import { describeNode, nodeLabel, nodeUsable, type SwarmNode, SwarmNodes } from '../swarm/swarmNodes.js';
import { SwarmRegistry } from '../swarm/swarmRegistry.js';
import { swarmCellLabels } from '../swarm/swarmServiceSpec.js';
import { MAX_CONFIG_BYTES, NodeLostError, type SwarmCellInput, SwarmTaskDriver } from '../swarm/swarmTaskDriver.js';
import { CELL_CA_PATH, findHostCaBundle } from '../hostCaBundle.js';
import { cellInputTar, recordCellInput } from '../swarm/swarmTransfer.js';
import { SwarmUnavailableError } from '../swarm/swarmUnavailable.js';
import { writeTar } from '../swarm/tarArchive.js';

export interface SwarmCellProviderOptions {
  /** The manager: unix:///path, tcp://host:port (TLS with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH) or ssh://user@host; default DOCKER_HOST. */
  dockerHost?: string;
  /** HOST:PORT of the registry the nodes pull base images from; default FORGE_SWARM_REGISTRY. */
  registry?: string;
  /** Swarm placement constraints every cell gets (e.g. node.labels.forge==cells); default none. */
  constraints?: string[];
  stateDir?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * Each try's steps, in ms since its start (prepared, service_created, task_running,
   * first_output, frame_ended, task_ended, waited, result): where a cell's time goes (bench).
   */
  onTimings?: (marks: Record<string, number>) => void;
}

/** The cluster cannot take cells (no manager, registry down): one line that says what to do. */
export { SwarmUnavailableError };

const MiB = 1024 * 1024;
/** Most bytes of an attempt's changes (as a tar archive) one swarm cell takes. */
const MAX_INPUT_BYTES = 256 * MiB;
/**
 * The cell user's id inside the task (its group is the same number: the wrapper enters both),
 * decided where host cells decide theirs (FORGE_CELL_UID, default 65532).
 */
const cellUid = (): number => dedicatedCellUser(process.env).uid;

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
  private readonly registry: SwarmRegistry;
  private readonly constraints: string[];
  private readonly managerName: string;
  private readonly onTimings: ((marks: Record<string, number>) => void) | undefined;
  private readonly cleanups = new PendingCleanups();
  /** Images in the registry this provider's cells use, by tag: what it verified or built. */
  private readonly images: RegistryImages;
  private readonly nodes: SwarmNodes;
  /** The host's CA bundle, read once (false: none). */
  private caBundle: { pem: Buffer } | false | undefined;
  /** allow_net cells' way to the egress proxy, started with the first of them. */
  private relay: SwarmEgressRelay | null = null;

  constructor(options: SwarmCellProviderOptions = {}) {
    this.env = options.env ?? process.env;
    const manager = connectSwarmManager(options.dockerHost, this.env);
    this.docker = manager.docker;
    this.managerName = manager.name;
    this.registry = new SwarmRegistry(options.registry ?? this.env.FORGE_SWARM_REGISTRY);
    this.constraints = options.constraints ?? [];
    this.onTimings = options.onTimings;
    this.stateDir = options.stateDir ?? runnerStateDir(this.env);
    this.logDir = join(this.stateDir, 'cells');
    this.nodes = new SwarmNodes(this.docker);
    this.images = new RegistryImages(this.docker, this.stateDir, (registry, path) => this.registry.url(registry, path), cellUid);
  }

  async drain(): Promise<void> {
    await this.cleanups.drain();
    const relay = this.relay;
    this.relay = null;
    await relay?.close();
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
    const details: Record<string, string> = {
      manager: this.managerName,
      egress: this.managerIsLocal()
        ? "allow_net through a relay on this engine to the runner's egress proxy"
        : "no allow_net: the manager is not the runner's engine (the relay to the egress proxy runs there)",
    };
    const nodes = await this.docker.listNodes();
    for (const n of nodes as SwarmNode[]) details[`node ${nodeLabel(n)}`] = describeNode(n, cellUid());
    const usable = (nodes as SwarmNode[]).filter(nodeUsable).length;
    let registry: string;
    try {
      registry = this.registry.address();
      await this.registry.check(registry);
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
      isolation: describeSwarmIsolation(null, null, cellUid()),
      details,
    };
  }

  /**
   * Swarm cells reach the egress proxy through a relay container on the manager's engine,
   * which must be the runner's own (the proxy listens on that engine's bridge): a manager
   * reached over TCP or SSH cannot carry allow_net cells.
   */
  async egressRefusal(): Promise<{ why: string; fix: string } | null> {
    if (this.managerIsLocal()) return null;
    return {
      why: `swarm cells reach the runner's egress proxy through a relay on the manager's engine, and the manager (${this.managerName}) is not this machine's engine`,
      fix: 'run the runner on a swarm manager (DOCKER_HOST unix://...), or use --provider docker or qemu',
    };
  }

  private managerIsLocal(): boolean {
    return typeof (this.docker.modem as unknown as { socketPath?: unknown }).socketPath === 'string';
  }

  async run(input: CellSpecInput, options: CellRunOptions = {}): Promise<CellResult> {
    const spec = parseCellSpec(input);
    if (spec.image === '') throw new InputError('the swarm provider needs an image; pass --image IMG (see forge-runner bake)');
    if (spec.allow_net !== false && !this.managerIsLocal()) {
      const refusal = (await this.egressRefusal())!;
      throw new InputError(`allow_net: ${refusal.why}; ${refusal.fix}`);
    }
    const registry = this.registry.address();
    const busybox = findBusybox();
    if (!busybox) throw new InputError('swarm cells need a static busybox on the runner: apt-get install busybox-static');
    // A diff needs the worktree's git data; the base tree travels from it, so it is resolved either way.
    const { worktree } = await prepareCellWorktree({ worktree: spec.worktree, capture_diff: true }, this.env, this.stateDir);
    const plan = vetCellMounts(spec, worktree, () => DOCKER_WORKDIR, { env: this.env, stateDir: this.stateDir });
    const workdir = plan.worktree?.target ?? DOCKER_WORKDIR;
    await this.registry.check(registry);
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
    // Changes too large for a config: one image over the base, shared by a resubmission, removed after.
    const inputImage: { ref: Promise<InputImage> | null } = { ref: null };
    try {
      const result = await this.runTries(spec, options, {
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
      });
      if (unsent.length > 0)
        result.isolation.warnings.push(
          `shared dependencies outside the worktree are not sent to swarm nodes (${unsent.join(', ')}): bake them into the image`,
        );
      if (depsWalk) result.isolation.warnings.push(...leftOutWarnings(depsWalk.leftOut, (t) => relative(workdir, t) || t));
      return result;
    } finally {
      if (inputImage.ref) {
        // After the cell's own removal (tracked by then): an image a container still uses cannot go.
        const pending = this.cleanups.now();
        const ref = inputImage.ref;
        this.cleanups.track(Promise.all(pending).then(async () => this.images.removeInputImage(registry, await ref.catch(() => null))));
      }
    }
  }

  private async runTries(
    spec: ReturnType<typeof parseCellSpec>,
    options: CellRunOptions,
    cell: SwarmCellInput & { worktree: CellWorktree | null },
  ): Promise<CellResult> {
    const retries: { node: string; reason: string }[] = [];
    const avoid: string[] = [];
    for (let tryNo = 0; ; tryNo++) {
      try {
        let nodeId: string | null = null;
        const result = await this.runOnce(spec, options, cell, { avoid, retryAllowed: tryNo === 0 }, (id) => (nodeId = id));
        result.node = nodeId ? await this.nodes.name(nodeId) : null;
        if (retries.length > 0) {
          result.retries = retries;
          result.isolation.warnings.push(
            `resubmitted after its node was lost: ${retries.map((r) => `${r.node} (${r.reason})`).join('; ')}`,
          );
        }
        return result;
      } catch (e) {
        if (!(e instanceof NodeLostError) || tryNo > 0) throw e;
        retries.push({ node: e.nodeId ? await this.nodes.name(e.nodeId) : 'unknown node', reason: e.reason });
        if (e.nodeId) avoid.push(e.nodeId);
      }
    }
  }

  private async runOnce(
    spec: ReturnType<typeof parseCellSpec>,
    options: CellRunOptions,
    cell: SwarmCellInput & { worktree: CellWorktree | null },
    attempt: { avoid: string[]; retryAllowed: boolean },
    placed: (nodeId: string) => void,
  ): Promise<CellResult> {
    const cellId = newCellId();
    mkdirSync(this.logDir, { recursive: true });
    const rl = planRlimits(spec, {
      cores: 1,
      cgroupMemory: true,
      cgroupPids: true,
      uidProcessCount: 0,
      hardLimits: runnerHardLimits(),
    });
    const isolation = describeSwarmIsolation(spec.limits, rl, cellUid(), spec.allow_net === false ? 'none' : 'allowlist');
    const labels = swarmCellLabels(spec, { cellId, runnerPid: process.pid, runnerHost: hostname() });
    const egress = spec.allow_net === false ? null : await this.cellNetwork(cellId, labels, spec, cell);
    const driver = new SwarmTaskDriver(
      this.docker,
      this.images,
      this.nodes,
      {
        cellId,
        spec,
        cell,
        ...attempt,
        // The installed dependencies are the layer's, not the worktree's: neither sent back nor applied.
        prune: cell.deps.map((d) => relative(cell.workdir, d.target)).filter((p) => p !== '' && !p.startsWith('..')),
        labels,
        ulimits: engineUlimits(rl),
        constraints: this.constraints,
        cellUid: cellUid(),
        network: egress
          ? { id: egress.net.networkId, relayIp: egress.net.relayIp, script: egress.script, caBundle: egress.caBundle }
          : null,
      },
      isolation,
      placed,
      (work) => this.cleanups.track(work),
    );
    const logPath = join(this.logDir, `${cellId}.log`);
    const facts = {
      cellId,
      provider: 'swarm',
      spec,
      options,
      logPath,
      worktree: cell.worktree,
      isolation,
      egress: egress?.grant ?? null,
      stateDir: this.stateDir,
    } as const;
    let result: CellResult;
    try {
      result = await runCellLifecycle(facts, driver);
    } finally {
      if (egress) {
        // After the service's removal (tracked by then): an overlay with a task on it cannot go.
        const pending = this.cleanups.now();
        const relay = egress.relay;
        this.cleanups.track(Promise.all(pending).then(() => relay.detach(egress.net)));
      }
    }
    const h = driver.handle;
    if (h && this.onTimings) this.onTimings({ ...h.marks, result: Date.now() - h.startedAt });
    const omitted = h?.omitted ?? [];
    if (result.diff && omitted.length > 0) {
      const known = new Set(result.diff.omitted.map((o) => o.path));
      result.diff.omitted.push(...omitted.filter((o) => !known.has(o.path)));
    }
    return result;
  }

  /** An allow_net cell's overlay with the relay on it, its proxy credentials and its script naming them. */
  private async cellNetwork(
    cellId: string,
    labels: Record<string, string>,
    spec: ReturnType<typeof parseCellSpec>,
    cell: SwarmCellInput,
  ): Promise<{
    relay: SwarmEgressRelay;
    net: CellNetwork;
    grant: NonNullable<ReturnType<typeof grantEgress>>;
    script: string;
    caBundle: Buffer | null;
  }> {
    const relay = (this.relay ??= new SwarmEgressRelay(this.docker, cell.busybox));
    const { proxy } = await relay.egress();
    const net = await relay.attach(cellId, labels);
    // Bound to the cell's own relay: a token that reached another cell is refused there.
    const grant = grantEgress(proxy, cellId, spec, net.relaySource)!;
    // The host's CA bundle travels as a config (public certificates, never a credential).
    const found = (this.caBundle ??= findHostCaBundle(this.env) ?? false);
    const caBundle = found && found.pem.length <= MAX_CONFIG_BYTES ? found.pem : null;
    const script = buildCellScript(spec, cell.workdir, caBundle ? CELL_CA_PATH : null, proxyEnv(grant, net.relayIp, RELAY_PORT));
    return { relay, net, grant, script, caBundle };
  }
}
