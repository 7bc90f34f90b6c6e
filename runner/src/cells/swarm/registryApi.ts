import { createHash } from 'node:crypto';

/**
 * The few calls of the registry's HTTP API (distribution v2) that `gc` makes: list a
 * repository's tags, read a tag's manifest and its image config, delete a manifest by digest.
 * What the registry holds is anyone's (no authentication: any local process can push), so
 * every answer is read with a timeout and a size bound, and digests and names are checked
 * before they go into a URL or a decision.
 */

/** The manifest types asked for: the registry answers with what it stores, never a conversion. */
export const MANIFEST_TYPES = [
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.index.v1+json',
] as const;

const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** The registry's own grammar for a tag. */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** Tags asked for per page (a registry that does not paginate sends them all). */
const PAGE = 1000;

export interface RegistryLimits {
  /** Each request, its answer included. */
  timeoutMs: number;
  /** Most tags read of one repository. */
  maxTags: number;
  /** Most bytes of one tags page. */
  maxListBytes: number;
  /** Most bytes of a manifest. */
  maxManifestBytes: number;
  /** Most bytes of an image config. */
  maxConfigBytes: number;
}

export const DEFAULT_REGISTRY_LIMITS: RegistryLimits = {
  timeoutMs: 10_000,
  maxTags: 5000,
  maxListBytes: 4 * 1024 * 1024,
  maxManifestBytes: 1024 * 1024,
  maxConfigBytes: 1024 * 1024,
};

/** The registry answered something gc cannot use; the message is one line. */
export class RegistryApiError extends Error {
  override readonly name = 'RegistryApiError';
  constructor(
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

export interface ManifestFacts {
  digest: string;
  /** The image config's digest; null for an index (several images, no config of its own). */
  configDigest: string | null;
}

export class RegistryApi {
  constructor(
    /** The URL of an API path on the registry. */
    private readonly url: (path: string) => string,
    private readonly limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
  ) {}

  /** Resolves when the registry answers its base endpoint (401 counts: it is there). */
  async check(): Promise<void> {
    const r = await this.request('/v2/', { method: 'GET' });
    await r.body?.cancel();
    if (!r.ok && r.status !== 401) throw new RegistryApiError(`HTTP ${r.status} on /v2/`, r.status);
  }

  /** The repository's tags (valid names only, at most maxTags); [] when it has none. */
  async tags(repository: string): Promise<{ tags: string[]; truncated: boolean }> {
    const tags: string[] = [];
    let path: string | null = `/v2/${repository}/tags/list?n=${PAGE}`;
    const maxPages = Math.ceil(this.limits.maxTags / PAGE) + 1;
    for (let page = 0; path && page < maxPages; page++) {
      const r = await this.request(path, { method: 'GET' });
      if (r.status === 404) {
        await r.body?.cancel();
        return { tags, truncated: false };
      }
      const body = await this.json(r, this.limits.maxListBytes, `the tags of ${repository}`);
      const listed = (body as { tags?: unknown }).tags;
      for (const t of Array.isArray(listed) ? listed : []) {
        if (typeof t !== 'string' || !TAG.test(t)) continue;
        if (tags.length >= this.limits.maxTags) return { tags, truncated: true };
        tags.push(t);
      }
      path = nextPage(r.headers.get('link'), repository);
    }
    return { tags, truncated: path !== null };
  }

  /** What the tag names: the manifest's digest and its image config's. */
  async manifest(repository: string, tag: string): Promise<ManifestFacts> {
    if (!TAG.test(tag)) throw new RegistryApiError(`"${tag}" is not a tag`);
    const r = await this.request(`/v2/${repository}/manifests/${tag}`, { method: 'GET', headers: { Accept: MANIFEST_TYPES.join(', ') } });
    const bytes = await this.body(r, this.limits.maxManifestBytes, `the manifest of ${repository}:${tag}`);
    const computed = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const said = r.headers.get('docker-content-digest');
    // The digest of the bytes is the manifest's name; a header that says otherwise is not believed.
    if (said !== null && said !== computed)
      throw new RegistryApiError(`the registry names ${repository}:${tag} ${said.slice(0, 80)}, but its manifest is ${computed}`);
    const m = parseJson(bytes, `the manifest of ${repository}:${tag}`) as { config?: { digest?: unknown }; manifests?: unknown };
    const config = m.config?.digest;
    if (typeof config === 'string' && DIGEST.test(config)) return { digest: computed, configDigest: config };
    if (Array.isArray(m.manifests)) return { digest: computed, configDigest: null };
    throw new RegistryApiError(`the manifest of ${repository}:${tag} names no image config`);
  }

  /** The labels of an image config (checked against its digest); {} when it has none. */
  async configLabels(repository: string, configDigest: string): Promise<Record<string, string>> {
    if (!DIGEST.test(configDigest)) throw new RegistryApiError(`"${configDigest.slice(0, 80)}" is not a digest`);
    const r = await this.request(`/v2/${repository}/blobs/${configDigest}`, { method: 'GET' });
    const bytes = await this.body(r, this.limits.maxConfigBytes, `the image config ${configDigest}`);
    if (`sha256:${createHash('sha256').update(bytes).digest('hex')}` !== configDigest)
      throw new RegistryApiError(`the registry's blob ${configDigest} does not match its digest`);
    const labels = (parseJson(bytes, `the image config ${configDigest}`) as { config?: { Labels?: unknown } }).config?.Labels;
    const out: Record<string, string> = {};
    if (labels && typeof labels === 'object')
      for (const [k, v] of Object.entries(labels as Record<string, unknown>)) if (typeof v === 'string') out[k] = v;
    return out;
  }

  /**
   * Deletes the manifest (and with it every tag of the repository that names it). 'gone': it
   * was not there. Throws with status 405 when the registry does not allow deletes.
   */
  async deleteManifest(repository: string, digest: string): Promise<'deleted' | 'gone'> {
    if (!DIGEST.test(digest)) throw new RegistryApiError(`"${digest.slice(0, 80)}" is not a digest`);
    const r = await this.request(`/v2/${repository}/manifests/${digest}`, { method: 'DELETE' });
    await r.body?.cancel();
    if (r.status === 202 || r.status === 200) return 'deleted';
    if (r.status === 404) return 'gone';
    if (r.status === 405)
      throw new RegistryApiError('the registry does not allow deletes (set storage.delete.enabled: true in its config)', 405);
    throw new RegistryApiError(`HTTP ${r.status} deleting ${repository}@${digest}`, r.status);
  }

  private async request(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(this.url(path), { ...init, signal: AbortSignal.timeout(this.limits.timeoutMs) });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code;
      throw new RegistryApiError(`${init.method ?? 'GET'} ${path.split('?')[0]}: ${cause ?? (e as Error).message}`);
    }
  }

  private async json(r: Response, max: number, what: string): Promise<unknown> {
    return parseJson(await this.body(r, max, what), what);
  }

  /** The body of a 2xx answer, at most `max` bytes (more is an error, not a truncation). */
  private async body(r: Response, max: number, what: string): Promise<Buffer> {
    if (!r.ok) {
      await r.body?.cancel();
      throw new RegistryApiError(`HTTP ${r.status} reading ${what}`, r.status);
    }
    const declared = Number(r.headers.get('content-length') ?? NaN);
    if (declared > max) {
      await r.body?.cancel();
      throw new RegistryApiError(`${what} is ${declared} bytes, over ${max}`);
    }
    const chunks: Buffer[] = [];
    if (!r.body) return Buffer.alloc(0);
    const reader = r.body.getReader();
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.length;
        if (size > max) throw new RegistryApiError(`${what} is over ${max} bytes`);
        chunks.push(Buffer.from(value));
      }
    } catch (e) {
      await reader.cancel().catch(() => undefined);
      if (e instanceof RegistryApiError) throw e;
      throw new RegistryApiError(`reading ${what}: ${(e as Error).message}`);
    }
    return Buffer.concat(chunks);
  }
}

/** Pure: the path of the next tags page from a Link header, only when it is this repository's tags list. */
export function nextPage(link: string | null, repository: string): string | null {
  const m = link ? /^<([^>]*)>;\s*rel="next"/.exec(link.trim()) : null;
  if (!m) return null;
  const path = m[1]!;
  return path.startsWith(`/v2/${repository}/tags/list?`) ? path : null;
}

function parseJson(bytes: Buffer, what: string): unknown {
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'));
    if (v === null || typeof v !== 'object') throw new Error('not an object');
    return v;
  } catch (e) {
    throw new RegistryApiError(`${what} is not JSON (${(e as Error).message.split('\n')[0]})`);
  }
}
