/**
 * Pure: whether an image a swarm cell needs can be taken from the registry as it is. The
 * registry has no authentication (any local process, a repository's install step among
 * them, can push), so a tag there proves nothing: only a digest the runner recorded when its
 * own engine pushed the image does. What the registry holds under the tag is used only when
 * it is one of those digests; anything else (another image, no image) means build and push
 * again, and a tag that names something else is said in the cell's warnings.
 */
export type RegistryImageVerdict = { kind: 'use'; digest: string } | { kind: 'build'; warning: string | null };

export function judgeRegistryImage(facts: {
  repository: string;
  tag: string;
  /** Digests this runner pushed under the tag (latest first). */
  recorded: readonly string[];
  /** What the registry's tag names now; null when it has no such tag. */
  tagDigest: string | null;
}): RegistryImageVerdict {
  const { repository, tag, recorded, tagDigest } = facts;
  if (tagDigest !== null && recorded.includes(tagDigest)) return { kind: 'use', digest: tagDigest };
  if (tagDigest === null)
    return {
      kind: 'build',
      warning:
        recorded.length === 0 ? null : `the registry no longer has ${repository}:${tag} as this runner built it (${recorded[0]}); rebuilt`,
    };
  const ours = recorded.length === 0 ? 'it has no record of pushing it' : `it pushed ${recorded[0]}`;
  return {
    kind: 'build',
    warning: `the registry's ${repository}:${tag} is not what this runner built (${ours}; the tag names ${tagDigest}); rebuilt`,
  };
}

/** Pure: the digest a push reported, from the engine's progress events. */
export function pushedDigest(events: readonly Record<string, unknown>[]): string | null {
  for (const e of events) {
    const d = (e.aux as { Digest?: unknown } | undefined)?.Digest;
    if (typeof d === 'string' && /^sha256:[0-9a-f]{64}$/.test(d)) return d;
  }
  return null;
}

/** Pure: registry/repository@digest, the only form a swarm cell names an image of the registry by. */
export function digestReference(registry: string, repository: string, digest: string): string {
  return `${registry}/${repository}@${digest}`;
}
