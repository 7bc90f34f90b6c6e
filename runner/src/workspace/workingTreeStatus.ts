import { configuredFilters, filtersOff, type RepoLocation, repoTarget, userExcludesFile } from './repoLocation.js';
import { runGit } from './safeGit.js';

export interface WorkingTreeStatus {
  /** Changed, staged, deleted or renamed tracked paths: not part of the attempts, and Apply would meet them. */
  tracked: string[];
  /** Files git does not track (and does not ignore): attempts start from HEAD without them. */
  untracked: string[];
}

/** Pure: `git status --porcelain` lines split into tracked changes and untracked files. */
export function splitWorkingTreeStatus(porcelain: string): WorkingTreeStatus {
  const tracked: string[] = [];
  const untracked: string[] = [];
  for (const line of porcelain.split('\n')) {
    if (line.length < 4) continue;
    (line.startsWith('?? ') ? untracked : tracked).push(line.slice(3));
  }
  return { tracked, untracked };
}

/** The user's checkout as `git status` sees it there (their global excludes honoured). */
export async function workingTreeStatus(loc: RepoLocation): Promise<WorkingTreeStatus> {
  const excludes = userExcludesFile();
  // No filter runs: which one would is up to a .gitattributes an applied attempt may have written.
  const config = [...(excludes ? [`core.excludesFile=${excludes}`] : []), ...filtersOff(await configuredFilters(loc))];
  const status = await runGit(repoTarget(loc, config), ['status', '--porcelain', '--untracked-files=all']);
  return splitWorkingTreeStatus(status.text);
}
