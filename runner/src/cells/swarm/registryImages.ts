import type Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { InputError } from '../../protocol/inputError.js';
import type { SwarmImageRecords } from '../../store/swarmImageRecords.js';
import type { WorktreeSource } from '../../workspace/captureWorktreeDiff.js';
import { type DependencySource, type DependencyWalk, dependencyFingerprint, dependencyLayerTar } from './dependencyLayer.js';
import { leaseRegistryTag } from './registryLeases.js';
import { pushLabels } from './registryOwnership.js';
import { digestReference, judgeRegistryImage, pushedDigest } from './registryTrust.js';
import { SWARM_TOOLS_DIR, SWARM_WRAPPER_SCRIPT, SWARM_INPUT_TAR } from './swarmCellScript.js';
import { baseImageTag, SWARM_BASE_REPOSITORY, SWARM_DEPS_REPOSITORY, SWARM_INPUT_REPOSITORY } from './swarmServiceSpec.js';
import { SwarmUnavailableError } from './swarmUnavailable.js';
import { baseLayerTar, treeOf } from './swarmTransfer.js';
import { TAR_END, tarFileParts, tarParts, writeTar } from './tarArchive.js';

/** An image of the registry a cell may use: named by the digest this runner pushed or verified. */
export interface PushedImage {
  ref: string;
  /** Said in the cell's warnings: the registry held something else under its tag. */
  warning: string | null;
}

/** The image of one cell's large changes: its local tag and pushed digest (both removed after the cell). */
export interface InputImage {
  tagged: string;
  digest: string;
  ref: string;
}

/**
 * The images swarm cells run from, in the registry: the cell's image with the base tree on
 * top, the installed dependencies as a layer over it, and one cell's large changes. Each is
 * built on the manager's engine and pushed once (build, push, digest in one place), and cells
 * name it by the digest this runner pushed or recorded, never by a tag.
 */
export class RegistryImages {
  private readonly images = new Map<string, Promise<PushedImage>>();
  private readonly depKeys = new Map<string, Promise<DependencyWalk>>();

  constructor(
    private readonly docker: Docker,
    private readonly stateDir: string,
    /** The registry's URL for a path (plain HTTP for a loopback registry). */
    private readonly registryUrl: (registry: string, path: string) => string,
    /** The cell user's id, owner of the worktree in the layers. */
    private readonly cellUid: () => number,
  ) {}

  /**
   * The cell's image with the base tree on top, in the registry: built and pushed once per
   * (image, tree, place) by this runner, and afterwards used by the digest it recorded.
   */
  async baseImage(
    image: string,
    src: WorktreeSource | null,
    base: string | null,
    workdir: string,
    registry: string,
    busybox: string,
  ): Promise<PushedImage> {
    const inspected = await this.docker
      .getImage(image)
      .inspect()
      .catch((e: { statusCode?: number }) => {
        if (e.statusCode === 404)
          throw new InputError(
            `image "${image}" is not in the manager's Docker engine; build it there with forge-runner bake or docker import`,
          );
        throw e;
      });
    const treeId = src && base ? await treeOf(src, base) : 'empty';
    const tag = baseImageTag({ imageId: inspected.Id, treeId, workdir, cellUid: this.cellUid() });
    return this.registryImage(registry, SWARM_BASE_REPOSITORY, tag, `the base image ${SWARM_BASE_REPOSITORY}:${tag}`, async () => {
      const layer =
        src && base ? await baseLayerTar(src, base, workdir, this.cellUid(), busybox) : emptyBaseLayer(workdir, busybox, this.cellUid());
      // By image id: the name could have been pulled or retagged since it was inspected.
      return [dockerContext(`FROM ${inspected.Id}\nADD layer.tar /\n`, { name: 'layer.tar', mode: 0o644, data: layer })];
    });
  }

  /** The dependencies' walk (fingerprint and what it left out), once per provider (one run): the checkout's installed tree does not change under a run. */
  dependencyKey(deps: DependencySource[]): Promise<DependencyWalk> {
    const key = JSON.stringify(deps);
    let known = this.depKeys.get(key);
    if (!known) {
      known = Promise.resolve().then(() => dependencyFingerprint(deps));
      this.depKeys.set(key, known);
      known.catch(() => this.depKeys.delete(key));
    }
    return known;
  }

  /**
   * The installed dependencies as a layer over the base (each at its target in the worktree,
   * owned by the cell user), content-addressed by base and fingerprint: built and pushed once
   * by this runner, then used by the digest it recorded.
   */
  dependencyImage(base: string, deps: DependencySource[], fingerprint: string, registry: string): Promise<PushedImage> {
    const tag = createHash('sha256').update(base).update('\0').update(fingerprint).digest('hex').slice(0, 40);
    const what = `the image with the installed dependencies (${deps.map((d) => d.target).join(', ')})`;
    return this.registryImage(registry, SWARM_DEPS_REPOSITORY, tag, what, () => {
      const layer = dependencyLayerTar(deps, this.cellUid());
      // What the tag promises is what the layer holds: a tree that changed since the walk is not sent under it.
      if (layer.fingerprint !== fingerprint)
        throw new InputError(
          `shared dependencies ${deps.map((d) => d.source).join(', ')} changed while they were sent to the swarm; share only directories nothing else is changing`,
        );
      const meta = { mode: 0o644, uid: 0, gid: 0, mtime: Math.floor(Date.now() / 1000) };
      // Streamed: the layer's file contents are never joined into one buffer. The base by digest.
      return [
        ...tarParts([{ name: 'Dockerfile', type: 'file', ...meta, data: Buffer.from(`FROM ${base}\nADD deps.tar /\n`) }], false),
        ...tarFileParts('deps.tar', layer.parts, meta),
        TAR_END(),
      ];
    });
  }

  /**
   * An image of the registry cells may use: what the registry holds under `tag` when it is one
   * this runner pushed (its record in the store), else built here and pushed, its digest
   * recorded. Cells name it by that digest. A tag that named something else is said once, in
   * the warnings of the cells that waited for the rebuild.
   */
  private registryImage(
    registry: string,
    repository: string,
    tag: string,
    what: string,
    context: () => Promise<Buffer[]> | Buffer[],
  ): Promise<PushedImage> {
    const key = `${registry}/${repository}:${tag}`;
    let made = this.images.get(key);
    if (!made) {
      made = (async () => {
        // Before the lookup: from here until this process exits, gc leaves the tag alone.
        leaseRegistryTag(this.stateDir, { pid: process.pid, host: hostname() }, registry, repository, tag);
        const recorded = await this.withImageRecords((r) => r.digests(registry, repository, tag));
        const verdict = judgeRegistryImage({ repository, tag, recorded, tagDigest: await this.registryDigest(registry, repository, tag) });
        if (verdict.kind === 'use') return { ref: digestReference(registry, repository, verdict.digest), warning: null };
        const { digest } = await this.buildAndPush(registry, repository, tag, await context(), what);
        await this.withImageRecords((r) => r.record(registry, repository, tag, digest));
        return { ref: digestReference(registry, repository, digest), warning: verdict.warning };
      })();
      const settled = made;
      this.images.set(key, settled);
      settled.then(
        (m) => {
          if (this.images.get(key) === settled) this.images.set(key, Promise.resolve({ ...m, warning: null }));
        },
        () => this.images.delete(key),
      );
    }
    return made;
  }

  /** Builds `context` on the manager's engine as registry/repository:tag and pushes it; the digest is the one the engine reports. */
  private async buildAndPush(
    registry: string,
    repository: string,
    tag: string,
    context: Buffer[],
    what: string,
  ): Promise<{ tagged: string; digest: string }> {
    const tagged = `${registry}/${repository}:${tag}`;
    // Who pushed it, in the image's config: gc reads it back to tell whether that runner is gone.
    const labels = pushLabels({ pid: process.pid, host: hostname(), stateDir: this.stateDir });
    const build = await this.docker.buildImage(Readable.from(context), { t: tagged, rm: true, forcerm: true, labels });
    await followProgress(this.docker, build, `building ${what}`);
    // The engine wants an auth header even for a registry without credentials (its own config supplies them).
    const push = await this.docker.getImage(tagged).push({ authconfig: { serveraddress: registry } });
    const events = await followProgress(this.docker, push, `pushing ${tagged} to the registry ${registry}`);
    // Never the registry's answer for the tag: someone may have pushed over it already.
    const digest =
      pushedDigest(events) ??
      ((await this.docker
        .getImage(tagged)
        .inspect()
        .then((i) => (i.RepoDigests ?? []).find((d) => d.startsWith(`${registry}/${repository}@sha256:`))?.split('@')[1])
        .catch(() => undefined)) ||
        null);
    if (!digest) throw new SwarmUnavailableError(`the registry ${registry} did not keep ${tagged}; check its storage`);
    return { tagged, digest };
  }

  /** The store's record of pushed images, opened for one use (better-sqlite3 is loaded only by swarm cells that push). */
  private async withImageRecords<T>(use: (records: SwarmImageRecords) => T): Promise<T> {
    const [{ openStore }, { SwarmImageRecords }] = await Promise.all([
      import('../../store/openStore.js'),
      import('../../store/swarmImageRecords.js'),
    ]);
    const db = openStore(join(this.stateDir, 'forge.db'));
    try {
      return use(new SwarmImageRecords(db));
    } finally {
      db.close();
    }
  }

  /**
   * The attempt's changes as a layer over the cell's base image (COPY of the input archive,
   * root-only, where the config would have put it), pushed under a content-addressed tag.
   * Built for the cell (never looked up) and named by the digest of this push.
   */
  async inputImage(base: string, inputTar: Buffer, registry: string): Promise<InputImage> {
    const tag = createHash('sha256').update(base).update('\0').update(inputTar).digest('hex').slice(0, 40);
    // The base by digest: what this runner pushed, whatever a tag names meanwhile.
    const context = dockerContext(`FROM ${base}\nCOPY input.tar ${SWARM_INPUT_TAR}\n`, { name: 'input.tar', mode: 0o400, data: inputTar });
    const pushed = await this.buildAndPush(
      registry,
      SWARM_INPUT_REPOSITORY,
      tag,
      [context],
      `the image that carries the attempt's changes (${inputTar.length} bytes)`,
    );
    return { ...pushed, ref: digestReference(registry, SWARM_INPUT_REPOSITORY, pushed.digest) };
  }

  /** After the cell: the input image leaves the registry (where it allows deletes) and the manager's engine. Nodes keep what they pulled. */
  async removeInputImage(registry: string, pushed: { tagged: string; digest: string } | null): Promise<void> {
    if (!pushed) return;
    await fetch(this.registryUrl(registry, `/v2/${SWARM_INPUT_REPOSITORY}/manifests/${pushed.digest}`), {
      method: 'DELETE',
      signal: AbortSignal.timeout(10_000),
    }).catch(() => undefined);
    await this.docker
      .getImage(pushed.tagged)
      .remove()
      .catch(() => undefined);
  }

  /** What the registry's tag names now (a claim by whoever pushed last), or null. */
  private async registryDigest(registry: string, repository: string, tag: string): Promise<string | null> {
    try {
      const r = await fetch(this.registryUrl(registry, `/v2/${repository}/manifests/${tag}`), {
        method: 'HEAD',
        headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' },
        signal: AbortSignal.timeout(10_000),
      });
      return r.ok ? r.headers.get('docker-content-digest') : null;
    } catch {
      return null;
    }
  }
}

function emptyBaseLayer(workdir: string, busybox: string, cellUid: number): Buffer {
  const mtime = Math.floor(Date.now() / 1000);
  const root = { uid: 0, gid: 0, mtime };
  const parts = workdir.split('/').filter(Boolean);
  return writeTar([
    { name: SWARM_TOOLS_DIR.slice(1), type: 'dir', mode: 0o755, ...root },
    { name: `${SWARM_TOOLS_DIR.slice(1)}/busybox`, type: 'file', mode: 0o755, ...root, data: readFileSync(busybox) },
    { name: `${SWARM_TOOLS_DIR.slice(1)}/wrapper.sh`, type: 'file', mode: 0o644, ...root, data: Buffer.from(SWARM_WRAPPER_SCRIPT) },
    ...parts.slice(0, -1).map((_, i) => ({ name: parts.slice(0, i + 1).join('/'), type: 'dir' as const, mode: 0o755, ...root })),
    { name: parts.join('/'), type: 'dir', mode: 0o755, uid: cellUid, gid: cellUid, mtime },
  ]);
}

/** Waits for an engine's build or push to end; its failure is one line naming `what`. */
export async function followProgress(docker: Docker, stream: NodeJS.ReadableStream, what: string): Promise<Record<string, unknown>[]> {
  const events = await new Promise<Record<string, unknown>[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: Record<string, unknown>[]) => (err ? reject(err) : resolve(out))),
  ).catch((e: Error) => {
    throw new SwarmUnavailableError(`${what} failed: ${e.message.split('\n')[0]}`);
  });
  const failed = events.find((e) => e.error || e.errorDetail);
  if (failed)
    throw new SwarmUnavailableError(`${what} failed: ${String(failed.error ?? JSON.stringify(failed.errorDetail)).split('\n')[0]}`);
  return events;
}

/** A build context of a Dockerfile and the one archive it adds, both root's. */
export function dockerContext(dockerfile: string, file: { name: string; mode: number; data: Buffer }): Buffer {
  const now = Math.floor(Date.now() / 1000);
  return writeTar([
    { name: 'Dockerfile', type: 'file', mode: 0o644, uid: 0, gid: 0, mtime: now, data: Buffer.from(dockerfile) },
    { name: file.name, type: 'file', mode: file.mode, uid: 0, gid: 0, mtime: now, data: file.data },
  ]);
}
