import { ProviderNameSchema, type ProviderName } from '../../protocol/cellResult.js';
import { InputError } from '../../protocol/inputError.js';
import { locateRepository } from '../../workspace/attemptWorktree.js';
import { readFileBeneath } from '../../hostguard/openBeneath.js';
import { repoTarget } from '../../workspace/repoLocation.js';
import { runGit } from '../../workspace/safeGit.js';

/** Where a run's cells come from: the provider, its image (docker and swarm), and how many cells to warm ahead. */
export interface RunSetup {
  provider: ProviderName;
  image: string | undefined;
  prewarm: number;
}

/** What the caller was asked (flags or fix/start params) and how its user gives an image, in their words. */
export interface RunAsked {
  provider?: string | undefined;
  image?: string | undefined;
  attempts: number;
  /** "pass --image IMG or run forge-runner bake first" for the CLI; the setting for the editor. */
  howToGiveImage: string;
}

/** Cells booted ahead of need: one per attempt, at most four. */
export const prewarmFor = (attempts: number): number => Math.min(attempts, 4);

/**
 * Pure: the provider and image of a run, the same for the CLI and the RPC. An image asked for,
 * else the user's bake record when the provider takes images (or none was asked); docker when
 * an image is known and no provider was asked, else host. Docker and swarm need an image.
 */
export function decideRunSetup(asked: RunAsked, baked: string | null): RunSetup {
  const named = asked.provider === undefined ? undefined : ProviderNameSchema.safeParse(asked.provider);
  if (named && !named.success)
    throw new InputError(`unknown provider "${asked.provider}"; choose one of: ${ProviderNameSchema.options.join(', ')}`);
  const takesImage = (p: ProviderName | undefined) => p === 'docker' || p === 'swarm';
  const wanted = named?.data;
  const image = asked.image || (takesImage(wanted) || wanted === undefined ? (baked ?? undefined) : undefined);
  const provider: ProviderName = wanted ?? (image ? 'docker' : 'host');
  if (takesImage(provider) && !image) throw new InputError(`${provider} cells need an image: ${asked.howToGiveImage}`);
  return { provider, image: takesImage(provider) ? image : undefined, prewarm: prewarmFor(asked.attempts) };
}

/** A run's set-up from what was asked and the repository's bake record (read here). */
export async function resolveRun(repo: string, asked: RunAsked, progress: (line: string) => void): Promise<RunSetup> {
  const needsRecord = !asked.image && (asked.provider === undefined || asked.provider === 'docker' || asked.provider === 'swarm');
  return decideRunSetup(asked, needsRecord ? await readBakeRecord(repo, progress) : null);
}

/**
 * The image `forge-runner bake` recorded for the repository, or null. Only a record bake
 * wrote counts: it keeps `.forge/` out of git (info/exclude), so a bake.json the repository
 * commits is the repository's choice of image, not yours, and is ignored (said in progress).
 * Read beneath the checkout without following a link.
 */
export async function readBakeRecord(repo: string, progress: (l: string) => void): Promise<string | null> {
  const r = readFileBeneath(repo, '.forge/bake.json', 1024 * 1024);
  if (r.kind !== 'ok') return null;
  const loc = await locateRepository(repo).catch(() => null);
  const tracked = loc ? await runGit(repoTarget(loc), ['ls-files', '-z', '--', '.forge/bake.json']).catch(() => null) : null;
  if (tracked?.text) {
    progress(
      'note: .forge/bake.json is committed in the repository, so it is not your bake record: ignored (run forge-runner bake, or pass --image)',
    );
    return null;
  }
  try {
    const image = (JSON.parse(r.bytes.toString('utf8')) as { image?: unknown }).image;
    return typeof image === 'string' && image !== '' ? image : null;
  } catch {
    return null;
  }
}
