import { detectStacks } from '../../images/detectStack.js';
import { readRepoFacts } from '../../images/readRepoFacts.js';
import { InputError } from '../../protocol/inputError.js';
import type { RepositoryCheck, RepositoryProblem } from '../../protocol/rpcFix.js';
import { locateRepository } from '../../workspace/attemptWorktree.js';
import { type RepoLocation, resolveCommit } from '../../workspace/repoLocation.js';
import { workingTreeStatus } from '../../workspace/workingTreeStatus.js';
import type { RunStore } from '../../store/runStore.js';
import { viewRepositoryFiles } from '../trust/repositoryTrust.js';

/** How many paths a check names (the counts are whole). */
const SAMPLE = 20;

/** Pure: the one line said before a run about files the attempts do not see. */
export function untrackedNote(untracked: readonly string[]): string | null {
  if (untracked.length === 0) return null;
  const names = untracked.slice(0, 3).join(', ');
  return `${untracked.length} untracked file(s) are not part of the attempts (they start from HEAD): ${names}${untracked.length > 3 ? ', …' : ''}`;
}

/**
 * What would stop a fix run in `repoPath`, found before anyone types an issue (the extension's
 * pre-flight, RPC fix/check): every problem at once, each with what to do. Untracked files
 * are not a problem: they are named, since the attempts will not see them.
 */
export async function checkRepository(
  repoPath: string,
  testCmd: string | undefined,
  store: Pick<RunStore, 'isRepositoryFileConfirmed'>,
): Promise<RepositoryCheck> {
  let loc: RepoLocation;
  try {
    loc = await locateRepository(repoPath);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    return {
      repo: null,
      problems: [{ code: 'not_a_repository', message: e.message, paths: [] }],
      untracked: { count: 0, sample: [] },
      test_cmd: null,
      install_cmd: null,
      repository_files: [],
    };
  }
  const problems: RepositoryProblem[] = [];
  if (!(await resolveCommit(loc, 'HEAD'))) {
    problems.push({ code: 'no_commit', message: `${loc.top} has no commit yet; commit the code to fix first`, paths: [] });
  }
  const status = await workingTreeStatus(loc);
  if (status.tracked.length > 0) {
    problems.push({
      code: 'tracked_changes',
      message: `${loc.top} has uncommitted changes to ${status.tracked.length} tracked path(s); the attempts start from HEAD without them`,
      paths: status.tracked.slice(0, SAMPLE),
    });
  }
  const stack = detectStacks(readRepoFacts(loc.top))[0];
  const detected = testCmd?.trim() || stack?.test || null;
  if (!detected) {
    problems.push({
      code: 'no_test_command',
      message: `no test command detected in ${loc.top}; set one (forge.testCommand, or --test-cmd)`,
      paths: [],
    });
  }
  return {
    repo: loc.top,
    problems,
    untracked: { count: status.untracked.length, sample: status.untracked.slice(0, SAMPLE) },
    test_cmd: detected,
    install_cmd: stack?.install ?? null,
    repository_files: viewRepositoryFiles(loc.top, store).filter((f) => f.state !== 'absent'),
  };
}
