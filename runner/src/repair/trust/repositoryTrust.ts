import type { RunStore } from '../../store/runStore.js';
import type { RepoLocation } from '../../workspace/repoLocation.js';
import type { ShareRequest } from '../dependencies/detectSharedDeps.js';
import { listIncludedFiles } from './includedFiles.js';
import { decideRepositoryRequests, type UnconfirmedFile, type UserRequests } from './repositoryConsent.js';
import { FORGE_INCLUDE_FILE, type RepositoryFileName, readRepositoryFiles } from './repositoryFiles.js';
import { FORGE_CONFIG_FILE } from '../dependencies/detectSharedDeps.js';

/** What a run takes from the checkout beyond its commit, decided once before anything runs. */
export interface RepositoryTrust {
  /** Untracked files of the checkout copied into every worktree of the run. */
  include: string[];
  share: ShareRequest[];
  exclude: string[];
  unconfirmed: UnconfirmedFile[];
  /** Said at the start of the run (and by the pre-flight). */
  notes: string[];
}

/**
 * Reads the repository's `.forgeinclude` and `.forge/config.json` (beneath the checkout, no
 * link followed), keeps what the user confirmed for their exact content and what the user's
 * own flags ask, and lists the untracked files to copy. A bad config.json is InputError.
 */
export async function resolveRepositoryTrust(
  loc: RepoLocation,
  user: UserRequests,
  store: Pick<RunStore, 'isRepositoryFileConfirmed'>,
): Promise<RepositoryTrust> {
  const files = readRepositoryFiles(loc.top);
  const requests = decideRepositoryRequests(files, (file, sha) => store.isRepositoryFileConfirmed(loc.top, file, sha), user, loc.top);
  const included = await listIncludedFiles(loc, requests.include);
  return {
    include: included.files,
    share: requests.share,
    exclude: requests.exclude,
    unconfirmed: requests.unconfirmed,
    notes: [...requests.notes, ...included.notes],
  };
}

/** One repository file as the user is asked to confirm it. */
export interface RepositoryFileView {
  file: RepositoryFileName;
  state: 'absent' | 'refused' | 'read';
  sha256: string | null;
  /** What it asks for, or why it is not read. */
  summary: string;
  confirmed: boolean;
}

/** Both files of the checkout, what each asks for and whether this content is confirmed. */
export function viewRepositoryFiles(top: string, store: Pick<RunStore, 'isRepositoryFileConfirmed'>): RepositoryFileView[] {
  const files = readRepositoryFiles(top);
  return (
    [
      [FORGE_INCLUDE_FILE, files.include],
      [FORGE_CONFIG_FILE, files.config],
    ] as const
  ).map(([file, f]) => ({
    file,
    state: f.state,
    sha256: f.state === 'read' ? f.sha256 : null,
    summary: f.state === 'read' ? f.summary : f.state === 'refused' ? f.why : 'not present',
    confirmed: f.state === 'read' && store.isRepositoryFileConfirmed(top, file, f.sha256),
  }));
}

/**
 * Records the user's confirmation of the checkout's files as they are now. With `expected`
 * (what the editor showed the user), only a file whose content still has that hash is
 * confirmed: a file changed after it was shown is not. Returns the files confirmed.
 */
export function confirmRepositoryFiles(
  top: string,
  store: Pick<RunStore, 'isRepositoryFileConfirmed' | 'confirmRepositoryFile'>,
  expected?: readonly { file: string; sha256: string }[],
): RepositoryFileView[] {
  const views = viewRepositoryFiles(top, store).filter((v) => v.state === 'read' && v.sha256);
  const chosen = expected ? views.filter((v) => expected.some((e) => e.file === v.file && e.sha256 === v.sha256)) : views;
  for (const v of chosen) store.confirmRepositoryFile(top, v.file, v.sha256!);
  return chosen.map((v) => ({ ...v, confirmed: true }));
}
