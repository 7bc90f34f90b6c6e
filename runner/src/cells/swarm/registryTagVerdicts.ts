import { LABEL_PUSHED_BY_HOST, LABEL_PUSHED_BY_PID, LABEL_PUSHED_BY_STATE } from './registryOwnership.js';
import { SWARM_BASE_REPOSITORY, SWARM_DEPS_REPOSITORY, SWARM_INPUT_REPOSITORY } from './swarmServiceSpec.js';

/** One tag of the registry as gc read it. Everything in it is a claim: anyone on the machine can push. */
export interface RegistryTag {
  repository: string;
  tag: string;
  /** The manifest's digest; null when it could not be read (then `unreadable` says why). */
  digest: string | null;
  /** The image config's labels; null when the manifest has no image config (an index) or it could not be read. */
  labels: Record<string, string> | null;
  unreadable?: string;
}

/** What gc knows of the runners and cells that may use the registry's images. */
export interface RegistryLiveness {
  /** This host's name: only runners of this host can be judged alive or gone. */
  host: string;
  /** The id of gc's state directory (registryOwnership.stateDirId): only its runners' leases are visible. */
  stateId: string;
  isAlive: (pid: number) => boolean;
  /** The lease files of gc's state directory, their entries already narrowed to this registry as "REPOSITORY:TAG". */
  leases: readonly { pid: number; host: string; tags: readonly string[]; truncated: boolean }[];
  /** Digests named by the images of live runners' swarm services; null when no manager was asked. */
  serviceDigests: ReadonlySet<string> | null;
}

export interface RegistryTagVerdict {
  repository: string;
  tag: string;
  digest: string | null;
  action: 'delete' | 'leave';
  reason: string;
}

/**
 * Pure: which tags of the swarm registry gc deletes. By the image's own labels (who pushed it):
 *
 * - `forge-cell-input` (one cell's changes, deleted by its runner after the cell): stale when
 *   the runner that pushed it ran on this host and is gone, and no live runner's service names it.
 * - `forge-cell-deps` (a checkout's installed dependencies, shared by every runner of the
 *   pusher's state directory through the digest it recorded): unused when, in addition, the
 *   pusher's state directory is gc's own (so every runner that may use it leases it in a file gc
 *   reads) and no live runner of it leases the tag.
 * - `forge-cell-base`: always left. Any run that recorded one reuses it, and a fresh run needs
 *   it again at once; it is the largest image to push again.
 *
 * A tag without the labels (pushed by an older forge-runner or by something else) is left:
 * gc cannot tell whose it is. The registry deletes a manifest with every tag that names it, so
 * a digest is deleted only when every tag of its repository that names it is judged stale.
 */
export function judgeRegistryTags(tags: readonly RegistryTag[], live: RegistryLiveness): RegistryTagVerdict[] {
  const leasedBy = new Map<string, number[]>();
  let truncatedLive = false;
  for (const l of live.leases) {
    // A lease of another host's process (a state directory on a shared disk) cannot be judged: kept.
    if (l.host === live.host && !live.isAlive(l.pid)) continue;
    truncatedLive ||= l.truncated;
    for (const t of l.tags) leasedBy.set(t, [...(leasedBy.get(t) ?? []), l.pid]);
  }
  const verdicts = tags.map((t) => judgeOne(t, live, leasedBy, truncatedLive));
  const kept = new Set(verdicts.filter((v) => v.action === 'leave' && v.digest).map((v) => `${v.repository}@${v.digest}`));
  return verdicts.map((v) => {
    if (v.action !== 'delete' || !kept.has(`${v.repository}@${v.digest}`)) return v;
    const other = verdicts.find((o) => o.action === 'leave' && o.repository === v.repository && o.digest === v.digest)!;
    return { ...v, action: 'leave', reason: `its manifest is also ${other.repository}:${other.tag}, which stays` };
  });
}

function judgeOne(
  t: RegistryTag,
  live: RegistryLiveness,
  leasedBy: ReadonlyMap<string, number[]>,
  truncatedLive: boolean,
): RegistryTagVerdict {
  const leave = (reason: string): RegistryTagVerdict => ({
    repository: t.repository,
    tag: t.tag,
    digest: t.digest,
    action: 'leave',
    reason,
  });
  if (t.repository === SWARM_BASE_REPOSITORY) return leave('base images are never removed by gc');
  if (t.repository !== SWARM_INPUT_REPOSITORY && t.repository !== SWARM_DEPS_REPOSITORY) return leave('not a forge-runner repository');
  if (t.digest === null) return leave(t.unreadable ?? 'its manifest could not be read');
  if (t.labels === null) return leave(t.unreadable ?? 'no image config (an index or a foreign manifest)');
  const pidLabel = t.labels[LABEL_PUSHED_BY_PID];
  const host = t.labels[LABEL_PUSHED_BY_HOST];
  if (pidLabel === undefined || host === undefined)
    return leave('no forge-runner labels: pushed by an older forge-runner or something else');
  const pid = Number(pidLabel);
  const runner = `runner ${shown(pidLabel)}@${shown(host)}`;
  if (!/^[1-9]\d{0,9}$/.test(pidLabel)) return leave(`its runner label is not a pid (${runner})`);
  if (host !== live.host) return leave(`pushed by ${runner} on another host`);
  if (live.isAlive(pid)) return leave(`${runner} is alive`);
  if (live.serviceDigests?.has(t.digest)) return leave(`a live runner's swarm service uses it; ${runner}, which pushed it, is gone`);
  if (t.repository === SWARM_INPUT_REPOSITORY) return { ...leave(''), action: 'delete', reason: `${runner} gone` };
  if (t.labels[LABEL_PUSHED_BY_STATE] !== live.stateId)
    return leave(`${runner} is gone, but it had another state directory, whose runners may still use it`);
  const users = leasedBy.get(`${t.repository}:${t.tag}`);
  if (users) return leave(`in use by live runner${users.length > 1 ? 's' : ''} ${users.join(', ')}; ${runner}, which pushed it, is gone`);
  if (truncatedLive) return leave(`${runner} is gone, but a live runner's lease file is too large to read whole`);
  return { ...leave(''), action: 'delete', reason: `${runner} gone; no live runner or service uses it` };
}

/** A label's value for a one-line reason: printable ASCII, bounded. */
function shown(value: string): string {
  const clean = value.replace(/[^\x21-\x7e]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 64)}...` : clean;
}
