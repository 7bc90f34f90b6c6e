import Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { runnerStateDir } from '../../cells/cellIdentity.js';
import { socketFromDockerHost } from '../../cells/providers/dockerCellProvider.js';
import type { Observation } from '../../protocol/instanceCell.js';
import { capabilityDescriptor } from '../capabilityMatrix.js';
import { instanceKey } from './hostInstanceProvider.js';
import {
  type EffectOutcome,
  type InstanceProvider,
  type InstanceRef,
  type ProbeOutcome,
  ProviderUnreachableError,
} from './instanceProvider.js';

export const LABEL_INSTANCE = 'forge.instance';
export const LABEL_GENERATION = 'forge.instance.generation';
export const LABEL_OPERATION = 'forge.instance.operation';
export const LABEL_STATE_DIR = 'forge.instance.state_dir';

const DEFAULT_COMMAND = ['tail', '-f', '/dev/null'];
const MiB = 1024 * 1024;

/**
 * Long-lived containers. The container name is derived from (instance, generation), so the
 * engine itself guarantees at most one runtime per incarnation however often create runs.
 */
export class DockerInstanceProvider implements InstanceProvider {
  readonly name = 'docker' as const;
  private readonly docker: Docker;
  private readonly stateDir: string;

  constructor(options: { socketPath?: string; stateDir?: string } = {}) {
    this.docker = new Docker({ socketPath: options.socketPath ?? socketFromDockerHost(process.env.DOCKER_HOST) ?? '/var/run/docker.sock' });
    this.stateDir = options.stateDir ?? runnerStateDir();
  }

  capabilities() {
    return capabilityDescriptor('docker');
  }

  async available() {
    try {
      const v = await this.docker.version();
      return { ok: true, reason: `Docker Engine ${v.Version} (API ${v.ApiVersion})` };
    } catch (e) {
      return { ok: false, reason: `Docker Engine not reachable: ${(e as Error).message}` };
    }
  }

  containerName(instanceId: string, generation: number): string {
    return `forge-inst-${instanceKey(instanceId)}-g${generation}`;
  }

  async create(ref: InstanceRef): Promise<EffectOutcome> {
    if (!ref.spec.image) throw new Error('a docker instance needs an image (spec.image)');
    const name = this.containerName(ref.instance_id, ref.generation);
    let changed = false;
    try {
      await this.call(() =>
        this.docker.createContainer({
          name,
          Image: ref.spec.image,
          Cmd: ref.spec.command ?? DEFAULT_COMMAND,
          Env: Object.entries(ref.spec.env).map(([k, v]) => `${k}=${v}`),
          Labels: {
            [LABEL_INSTANCE]: ref.instance_id,
            [LABEL_GENERATION]: String(ref.generation),
            [LABEL_OPERATION]: ref.operation_id,
            [LABEL_STATE_DIR]: this.stateDir,
          },
          HostConfig: {
            Init: true,
            NetworkMode: ref.spec.allow_net ? 'bridge' : 'none',
            CapDrop: ['ALL'],
            SecurityOpt: ['no-new-privileges'],
            ...(ref.spec.memory_mib ? { Memory: ref.spec.memory_mib * MiB } : {}),
            RestartPolicy: { Name: 'no' },
          },
        }),
      );
      changed = true;
    } catch (e) {
      // 409: this incarnation's container exists already (an earlier delivery made it).
      if ((e as { statusCode?: number }).statusCode !== 409) throw e;
    }
    const started = await this.startContainer(name);
    return { changed: changed || started, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async start(ref: InstanceRef): Promise<EffectOutcome> {
    const name = this.containerName(ref.instance_id, ref.generation);
    const obs = await this.inspect(ref.instance_id, ref.generation);
    if (obs.runtime_state === 'absent')
      throw new Error(`instance ${ref.instance_id} generation ${ref.generation} has no container; provision a new generation`);
    const changed = await this.startContainer(name);
    return { changed, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async stop(ref: InstanceRef): Promise<EffectOutcome> {
    const name = this.containerName(ref.instance_id, ref.generation);
    let changed = true;
    try {
      await this.call(() => this.docker.getContainer(name).stop({ t: 10 }));
    } catch (e) {
      const code = (e as { statusCode?: number }).statusCode;
      if (code !== 304 && code !== 404) throw e;
      changed = false;
    }
    return { changed, observation: await this.inspect(ref.instance_id, ref.generation) };
  }

  async destroy(ref: InstanceRef): Promise<EffectOutcome> {
    const name = this.containerName(ref.instance_id, ref.generation);
    let changed = true;
    try {
      await this.call(() => this.docker.getContainer(name).remove({ force: true, v: true }));
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode !== 404) throw e;
      changed = false;
    }
    const obs = await this.inspect(ref.instance_id, ref.generation);
    return { changed, observation: obs.runtime_state === 'absent' ? { ...obs, runtime_state: 'removed' } : obs };
  }

  async inspect(instanceId: string, generation: number): Promise<Observation> {
    try {
      const info = await this.call(() => this.docker.getContainer(this.containerName(instanceId, generation)).inspect());
      const status = info.State.Status;
      const runtime_state =
        status === 'running' || status === 'restarting' || status === 'paused' ? 'running' : status === 'created' ? 'created' : 'exited';
      return { generation, runtime_state, runtime_id: info.Id.slice(0, 12) };
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return { generation, runtime_state: 'absent', runtime_id: null };
      throw e;
    }
  }

  async probe(ref: InstanceRef): Promise<ProbeOutcome> {
    const obs = await this.inspect(ref.instance_id, ref.generation);
    if (obs.runtime_state !== 'running') return { ready: false, detail: `container ${obs.runtime_state}` };
    const cmd = ref.spec.readiness ?? ['true'];
    const container = this.docker.getContainer(this.containerName(ref.instance_id, ref.generation));
    const exec = await this.call(() => container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true }));
    const stream = await exec.start({ hijack: true, stdin: false });
    const sink = new PassThrough();
    sink.resume();
    this.docker.modem.demuxStream(stream, sink, sink);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        stream.destroy();
        resolve();
      }, 10_000);
      stream.on('end', () => {
        clearTimeout(timer);
        resolve();
      });
      stream.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
      stream.on('error', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const r = await exec.inspect();
    return { ready: r.ExitCode === 0, detail: `readiness probe exited ${r.ExitCode ?? 'without a code'}` };
  }

  /** Containers of this state dir (for gc and for tests that must leave none). */
  async listOwned(): Promise<Array<{ name: string; instance: string; generation: number }>> {
    const list = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_STATE_DIR}=${this.stateDir}`] } });
    return list.map((c) => ({
      name: (c.Names[0] ?? c.Id).replace(/^\//, ''),
      instance: c.Labels[LABEL_INSTANCE] ?? '',
      generation: Number(c.Labels[LABEL_GENERATION]),
    }));
  }

  /** true when this call started it; false when it was running already. */
  private async startContainer(name: string): Promise<boolean> {
    try {
      await this.call(() => this.docker.getContainer(name).start());
      return true;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 304) return false;
      throw e;
    }
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'ECONNREFUSED' || code === 'ENOENT' || code === 'ECONNRESET' || code === 'ETIMEDOUT') {
        throw new ProviderUnreachableError(`Docker Engine did not answer (${code}); the outcome is unknown until inspected`);
      }
      throw e;
    }
  }
}
