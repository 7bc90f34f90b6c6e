import type Docker from 'dockerode';

/** The fields of Engine API nodes this runner reads. */
export interface SwarmNode {
  ID?: string;
  Spec?: { Role?: string; Availability?: string };
  Description?: { Hostname?: string; Resources?: { NanoCPUs?: number; MemoryBytes?: number }; Engine?: { EngineVersion?: string } };
  Status?: { State?: string; Addr?: string };
}

/** Pure: a node as the user reads it. */
export function nodeLabel(n: SwarmNode): string {
  // Engines on one machine share a hostname (and reach the manager from one address): the id tells them apart.
  return `${n.Description?.Hostname ?? '?'}/${(n.ID ?? '?').slice(0, 12)}`;
}

/** Pure: one node's line in `health` (state, availability, role, resources, engine, isolation). */
export function describeNode(n: SwarmNode, cellUid: number): string {
  const res = n.Description?.Resources;
  return [
    n.Status?.State ?? 'unknown',
    n.Spec?.Availability ?? 'unknown',
    n.Spec?.Role ?? '?',
    `${((res?.NanoCPUs ?? 0) / 1e9).toFixed(1)} CPUs`,
    `${((res?.MemoryBytes ?? 0) / 1024 / 1024 / 1024).toFixed(1)} GiB`,
    `engine ${n.Description?.Engine?.EngineVersion ?? '?'}`,
    `isolation: container with capabilities dropped, links taken down inside the task, command as uid ${cellUid} with no_new_privs`,
  ].join(', ');
}

/** Pure: whether a node can take tasks now. */
export const nodeUsable = (n: SwarmNode): boolean => n.Status?.State === 'ready' && n.Spec?.Availability === 'active';

/**
 * The cluster's nodes as the manager last listed them (names for results, states for judging a
 * task whose node may be gone): asked again at most once a second unless forced.
 */
export class SwarmNodes {
  private names = new Map<string, { name: string; state: string }>();
  private fetchedAt = 0;

  constructor(private readonly docker: Docker) {}

  async refresh(force: boolean): Promise<void> {
    if (!force && Date.now() - this.fetchedAt < 1000) return;
    this.fetchedAt = Date.now();
    const nodes = (await this.docker.listNodes().catch(() => [])) as SwarmNode[];
    const next = new Map<string, { name: string; state: string }>();
    for (const n of nodes) if (n.ID) next.set(n.ID, { name: nodeLabel(n), state: n.Status?.State ?? 'unknown' });
    this.names = next;
  }

  /** The node's state as last listed, or null when it was not listed. */
  state(id: string): string | null {
    return this.names.get(id)?.state ?? null;
  }

  /** The node's label (asking the manager when it is not known yet); its id when it is gone. */
  async name(id: string): Promise<string> {
    if (!this.names.has(id)) await this.refresh(true);
    return this.names.get(id)?.name ?? id;
  }
}
