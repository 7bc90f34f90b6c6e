import type Docker from 'dockerode';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { GcItem } from '../../workspace/staleWorktrees.js';
import { LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from '../dockerContainerSpec.js';
import { RegistryApi, RegistryApiError } from './registryApi.js';
import { readRegistryLeases, removeLease } from './registryLeases.js';
import { stateDirId } from './registryOwnership.js';
import { judgeRegistryTags, type RegistryTag } from './registryTagVerdicts.js';
import { SWARM_BASE_REPOSITORY, SWARM_DEPS_REPOSITORY, SWARM_INPUT_REPOSITORY } from './swarmServiceSpec.js';

/** Said whenever gc removes (or would remove) tags: deleting a manifest frees no disk by itself. */
export const BLOB_SPACE_NOTE =
  "a removed tag's layers stay on the registry's disk until its own garbage collection runs " +
  '(docker-registry garbage-collect CONFIG, with the registry stopped or read-only); gc does not run it';

/**
 * Finds (and unless dryRun deletes, by digest) the registry's `forge-cell-input` tags of gone
 * runners and its `forge-cell-deps` tags no live runner or service uses (the rule is
 * registryTagVerdicts.ts's); `forge-cell-base` is only counted. Afterwards the lease files of
 * gone runners go, and the store of `stateDir` forgets the digests deleted (a later run
 * rebuilds them without a warning).
 */
export async function collectStaleRegistryTags(o: {
  registry: string;
  /** The URL of an API path on the registry. */
  url: (path: string) => string;
  stateDir: string;
  dryRun: boolean;
  isAlive: (pid: number) => boolean;
  /** Digests the swarm services of live runners use; null when no manager was asked. */
  serviceDigests: ReadonlySet<string> | null;
  api?: RegistryApi;
}): Promise<{ items: GcItem[]; notes: string[] }> {
  const api = o.api ?? new RegistryApi(o.url);
  const notes: string[] = [];
  const at = `registry ${o.registry}`;
  try {
    await api.check();
  } catch (e) {
    return { items: [], notes: [`${at} does not answer (${(e as Error).message}): its tags were not checked`] };
  }
  const host = hostname();
  const found: RegistryTag[] = [];
  for (const repository of [SWARM_INPUT_REPOSITORY, SWARM_DEPS_REPOSITORY]) {
    let listed: { tags: string[]; truncated: boolean };
    try {
      listed = await api.tags(repository);
    } catch (e) {
      notes.push(`${at}: ${repository} not checked (${(e as Error).message})`);
      continue;
    }
    if (listed.truncated) notes.push(`${at}: only the first ${listed.tags.length} tags of ${repository} were checked`);
    for (const tag of listed.tags) found.push(await readTag(api, repository, tag));
  }
  const base = await api.tags(SWARM_BASE_REPOSITORY).catch(() => null);
  if (base && base.tags.length > 0)
    notes.push(`${at}: ${base.tags.length} ${SWARM_BASE_REPOSITORY} tag(s) left (gc never removes base images)`);
  if (o.serviceDigests === null) notes.push(`${at}: no swarm manager answered, so tags were judged without its services`);

  // Leases last, just before deleting: a runner that started using a tag meanwhile has leased it by now.
  const leases = readRegistryLeases(o.stateDir);
  const prefix = `${o.registry} `;
  const verdicts = judgeRegistryTags(found, {
    host,
    stateId: stateDirId(o.stateDir),
    isAlive: o.isAlive,
    leases: leases.map((l) => ({
      pid: l.pid,
      host: l.host,
      truncated: l.truncated,
      tags: l.entries.filter((e) => e.startsWith(prefix)).map((e) => e.slice(prefix.length)),
    })),
    serviceDigests: o.serviceDigests,
  });

  const items: GcItem[] = [];
  const deleted = new Map<string, 'deleted' | 'gone'>();
  let refused: string | null = null;
  for (const v of verdicts) {
    const id = `${v.repository}:${v.tag}`;
    if (v.action === 'leave') {
      items.push({ kind: 'registry', id, action: 'left', reason: v.reason });
      continue;
    }
    if (o.dryRun) {
      items.push({ kind: 'registry', id, action: 'would remove', reason: v.reason });
      continue;
    }
    const key = `${v.repository}@${v.digest}`;
    if (refused === null && !deleted.has(key)) {
      try {
        deleted.set(key, await api.deleteManifest(v.repository, v.digest!));
      } catch (e) {
        if (e instanceof RegistryApiError && e.status === 405) refused = e.message;
        else {
          items.push({ kind: 'registry', id, action: 'left', reason: `${v.reason}, but deleting it failed: ${(e as Error).message}` });
          continue;
        }
      }
    }
    if (refused !== null) {
      items.push({ kind: 'registry', id, action: 'left', reason: `${v.reason}, but ${refused}` });
      continue;
    }
    items.push({ kind: 'registry', id, action: 'removed', reason: v.reason });
  }
  if (items.some((i) => i.action !== 'left')) notes.push(`${at}: ${BLOB_SPACE_NOTE}`);
  if (!o.dryRun) {
    for (const l of leases) if (l.host === host && !o.isAlive(l.pid)) removeLease(l.file);
    await forgetDeleted(o.stateDir, o.registry, verdicts, deleted).catch((e: Error) =>
      notes.push(`${at}: the store's records of removed tags stay (${e.message.split('\n')[0]}); a later run rebuilds them with a warning`),
    );
  }
  return { items, notes };
}

/** The tag's digest and labels, or why they could not be read. */
async function readTag(api: RegistryApi, repository: string, tag: string): Promise<RegistryTag> {
  let digest: string | null = null;
  try {
    const m = await api.manifest(repository, tag);
    digest = m.digest;
    if (m.configDigest === null)
      return { repository, tag, digest, labels: null, unreadable: 'an index, not an image: not pushed by forge-runner' };
    return { repository, tag, digest, labels: await api.configLabels(repository, m.configDigest) };
  } catch (e) {
    return { repository, tag, digest, labels: null, unreadable: `could not be read: ${(e as Error).message}` };
  }
}

/** Drops the store's records of what was deleted, so the next run that needs it builds it again quietly. */
async function forgetDeleted(
  stateDir: string,
  registry: string,
  verdicts: readonly { repository: string; tag: string; digest: string | null; action: string }[],
  deleted: ReadonlyMap<string, 'deleted' | 'gone'>,
): Promise<void> {
  const path = join(stateDir, 'forge.db');
  const gone = verdicts.filter((v) => v.action === 'delete' && deleted.has(`${v.repository}@${v.digest}`));
  if (gone.length === 0 || !existsSync(path)) return;
  const [{ openStore }, { SwarmImageRecords }] = await Promise.all([
    import('../../store/openStore.js'),
    import('../../store/swarmImageRecords.js'),
  ]);
  const db = openStore(path);
  try {
    const records = new SwarmImageRecords(db);
    for (const v of gone) records.forget(registry, v.repository, v.tag, v.digest!);
  } finally {
    db.close();
  }
}

/**
 * The digests the swarm services of live runners name (`…@sha256:…`); services of this host's
 * gone runners do not count (gc removes them). null when the engine is not a swarm manager.
 */
export async function liveServiceDigests(docker: Docker, isAlive: (pid: number) => boolean): Promise<Set<string> | null> {
  const info = (await docker.info()) as { Swarm?: { ControlAvailable?: boolean } };
  if (!info.Swarm?.ControlAvailable) return null;
  const host = hostname();
  const digests = new Set<string>();
  for (const s of (await docker.listServices()) as { Spec?: { Labels?: Record<string, string>; TaskTemplate?: unknown } }[]) {
    const labels = s.Spec?.Labels ?? {};
    const pid = Number(labels[LABEL_RUNNER_PID]);
    if (labels[LABEL_RUNNER_HOST] === host && Number.isInteger(pid) && !isAlive(pid)) continue;
    const image = (s.Spec?.TaskTemplate as { ContainerSpec?: { Image?: unknown } } | undefined)?.ContainerSpec?.Image;
    const digest = typeof image === 'string' ? /@(sha256:[0-9a-f]{64})$/.exec(image)?.[1] : undefined;
    if (digest) digests.add(digest);
  }
  return digests;
}
