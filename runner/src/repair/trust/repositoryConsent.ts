import type { ForgeConfig } from '../dependencies/detectSharedDeps.js';
import { FORGE_INCLUDE_FILE, type RepositoryFileName, type RepositoryFiles } from './repositoryFiles.js';

/** Where a request comes from: the repository's own files (confirmed by the user), or the user's flags and settings. */
export type RequestOrigin = 'repository' | 'you';

/** A repository file that asks for something the user has not confirmed (for this exact content). */
export interface UnconfirmedFile {
  file: RepositoryFileName;
  sha256: string;
  summary: string;
}

/** What a run takes from the repository's files and the user's own flags. */
export interface RepositoryRequests {
  include: { glob: string; from: RequestOrigin }[];
  share: { path: string; from: RequestOrigin }[];
  /** Detected dependencies not to share: asked by anyone (it only ever shares less). */
  exclude: string[];
  unconfirmed: UnconfirmedFile[];
  /** One line each, for progress and the pre-flight: files refused or not confirmed. */
  notes: string[];
}

/** The user's own word: flags and settings that live outside the repository. */
export interface UserRequests {
  include: readonly string[];
  share: readonly string[];
}

/**
 * Pure: what a run takes from the repository's files. A file's requests count only when the
 * user confirmed its exact content (`confirmed(file, sha256)`); `exclude` always counts,
 * since it only shares less. The user's flags always count.
 */
export function decideRepositoryRequests(
  files: RepositoryFiles,
  confirmed: (file: RepositoryFileName, sha256: string) => boolean,
  user: UserRequests,
  repo: string,
): RepositoryRequests {
  const out: RepositoryRequests = {
    include: user.include.map((glob) => ({ glob, from: 'you' as const })),
    share: user.share.map((path) => ({ path, from: 'you' as const })),
    exclude: [],
    unconfirmed: [],
    notes: [],
  };
  const { include, config } = files;
  if (include.state === 'refused') out.notes.push(`the repository's ${FORGE_INCLUDE_FILE}: ${include.why}`);
  if (include.state === 'read' && include.value.length > 0) {
    if (confirmed(FORGE_INCLUDE_FILE, include.sha256))
      out.include.push(...include.value.map((glob) => ({ glob, from: 'repository' as const })));
    else out.unconfirmed.push({ file: FORGE_INCLUDE_FILE, sha256: include.sha256, summary: include.summary });
  }
  if (config.state === 'refused') out.notes.push(`the repository's .forge/config.json: ${config.why}`);
  if (config.state === 'read') {
    const deps: ForgeConfig['dependencies'] = config.value.dependencies;
    out.exclude.push(...deps.exclude);
    if (deps.share.length > 0) {
      if (confirmed('.forge/config.json', config.sha256))
        out.share.push(...deps.share.map((path) => ({ path, from: 'repository' as const })));
      else out.unconfirmed.push({ file: '.forge/config.json', sha256: config.sha256, summary: config.summary });
    }
  }
  for (const u of out.unconfirmed) out.notes.push(unconfirmedNote(u, repo));
  return out;
}

/** Pure: the line that says a repository file was not used, and the way to use it. */
export function unconfirmedNote(u: UnconfirmedFile, repo: string): string {
  const flag = u.file === FORGE_INCLUDE_FILE ? '--include GLOB' : '--share DIR';
  return `the repository's ${u.file} ${u.summary}: not used, since it comes with the repository, not from you; if you agree, run "forge-runner trust --repo ${repo}" (recorded for this content) or pass ${flag}`;
}
