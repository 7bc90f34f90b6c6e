import { type RepoLocation, repoTarget } from '../../workspace/repoLocation.js';
import { INCLUDE_LIMITS } from '../../workspace/copyIncludedFiles.js';
import { nulRecords, runGit } from '../../workspace/safeGit.js';
import { includePathspecs } from './repositoryFiles.js';
import type { RepositoryRequests } from './repositoryConsent.js';
import { looksLikeSecret } from './secretNames.js';

export interface IncludedFiles {
  /** Untracked files of the checkout to copy into every worktree of the run (relative paths). */
  files: string[];
  notes: string[];
}

/**
 * The untracked files of the user's checkout the run copies into every worktree: those the
 * user's own `--include` globs match, and those of a confirmed `.forgeinclude` that do not
 * look like credentials (a repository's list never brings `.env` or a key into a cell; the
 * user's flag naming it does, with a warning). Nothing under `.forge/` or `.git`.
 */
export async function listIncludedFiles(loc: RepoLocation, include: RepositoryRequests['include']): Promise<IncludedFiles> {
  const notes: string[] = [];
  const files = new Set<string>();
  for (const from of ['you', 'repository'] as const) {
    const globs = include.filter((i) => i.from === from).map((i) => i.glob);
    if (globs.length === 0) continue;
    // Glob magic on the user's own checkout; each line is one pattern, never further magic.
    const out = await runGit(repoTarget(loc), ['ls-files', '-z', '--others', '--', ...includePathspecs(globs), ':(exclude).forge/'], {
      env: { GIT_LITERAL_PATHSPECS: '0' },
    });
    const secrets: string[] = [];
    for (const rel of nulRecords(out.text)) {
      if (rel.split('/').includes('.git')) continue;
      if (looksLikeSecret(rel)) {
        if (from === 'repository') {
          secrets.push(rel);
          continue;
        }
        notes.push(
          `warning: --include copies ${rel} into every attempt; every cell and the agent can read it (it looks like it holds credentials)`,
        );
      }
      files.add(rel);
    }
    if (secrets.length > 0)
      notes.push(
        `the repository's .forgeinclude names ${secrets.slice(0, 5).join(', ')}${secrets.length > 5 ? ', ...' : ''}, which look like credentials: not copied (a repository's list never brings them into a cell; --include NAME does, if you mean it)`,
      );
  }
  const list = [...files].sort();
  if (list.length > INCLUDE_LIMITS.files)
    notes.push(`${list.length} untracked files are named to be copied; only the first ${INCLUDE_LIMITS.files} are`);
  return { files: list.slice(0, INCLUDE_LIMITS.files), notes };
}
