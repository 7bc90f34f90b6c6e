import { InputError } from '../protocol/inputError.js';
import { locateRepository } from './attemptWorktree.js';
import { rememberCheckoutOwners, rememberObjectDirs } from '../hostguard/checkoutOwnership.js';
import { configuredFilters, repoTarget } from './repoLocation.js';
import { workingTreeStatus } from './workingTreeStatus.js';
import { runGit } from './safeGit.js';

/**
 * `git stash push` of the tracked changes in the user's checkout, asked for by the user before
 * a fix run (the extension's "Stash and Continue"): untracked files stay where they are.
 * Through the safe git like every other call (no hooks, no config programs); the stash commit
 * names Forge Cells, since the user's identity lives in a global config the runner never reads.
 */
export async function stashTrackedChanges(repoPath: string, now = new Date()): Promise<{ stashed: boolean; message: string }> {
  const loc = await locateRepository(repoPath);
  // A stash runs the repository's filters (clean and smudge) on files a .gitattributes in the
  // checkout picks, which an applied attempt may have written: with filters, the user stashes.
  const filters = await configuredFilters(loc);
  if (filters.length > 0) {
    throw new InputError(
      `${loc.top} configures git filters (${filters.join(', ')}); forge does not run them: stash or commit the changes yourself (git stash), then start the fix`,
    );
  }
  const status = await workingTreeStatus(loc);
  // A root runner's stash writes the index, refs and restored files as root: given back afterwards.
  const restoreFiles = rememberCheckoutOwners(loc.top, status.tracked);
  const restoreGit = rememberCheckoutOwners(loc.gitDir, ['index', 'ORIG_HEAD', 'logs/HEAD']);
  const restoreCommon = rememberCheckoutOwners(loc.commonDir, ['refs/stash', 'logs/refs/stash']);
  const restoreObjects = rememberObjectDirs(loc.objectsDir);
  const label = `forge: before a fix run, ${now.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const r = await runGit(repoTarget(loc), ['stash', 'push', '--message', label], {
    env: {
      GIT_AUTHOR_NAME: 'Forge Cells',
      GIT_AUTHOR_EMAIL: 'forge@localhost',
      GIT_COMMITTER_NAME: 'Forge Cells',
      GIT_COMMITTER_EMAIL: 'forge@localhost',
    },
    maxBytes: 64 * 1024,
  }).catch((e: Error) => {
    throw new InputError(`git stash in ${loc.top} failed: ${e.message.split('\n')[0]}; stash or commit the changes yourself`);
  });
  restoreFiles();
  restoreGit();
  restoreCommon();
  restoreObjects();
  if (/no local changes to save/i.test(r.text)) return { stashed: false, message: `${loc.top} had no tracked changes to stash` };
  return { stashed: true, message: `stashed the tracked changes of ${loc.top} as "${label}" (git stash pop brings them back)` };
}
