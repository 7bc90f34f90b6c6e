import type { RepositoryCheck } from '../../../runner/src/protocol/rpcFix.js';

export type PreflightAction = 'openModelSettings' | 'initRepository' | 'openSourceControl' | 'editTestCommand';

export interface PreflightPlan {
  /** A problem no run can start with: said with its way out, and the flow stops. */
  block: { message: string; actions: { label: string; action: PreflightAction }[] } | null;
  /** Tracked changes: the user chooses to stash them or to run from HEAD without them. */
  dirty: { message: string; detail: string } | null;
  /** What the issue prompt says about files the attempts will not see. */
  untracked: string | null;
  /**
   * The repository's own files ask for something the user has not confirmed (files copied into
   * every attempt, directories shared with every cell): asked once per content.
   */
  repositoryFiles: { message: string; detail: string; files: { file: string; sha256: string }[] } | null;
}

/**
 * Pure: what to say before the issue is asked for, from the model setting's problem (null when
 * it is usable) and the runner's fix/check. The first blocking problem wins (the model first:
 * nothing else matters without one).
 */
export function planPreflight(modelProblem: string | null, check: RepositoryCheck | null): PreflightPlan {
  const untracked =
    check && check.untracked.count > 0
      ? `${check.untracked.count} untracked file(s) are not part of the attempts (they start from HEAD)`
      : null;
  if (modelProblem) {
    return {
      block: { message: `Forge: ${modelProblem}`, actions: [{ label: 'Open Settings', action: 'openModelSettings' }] },
      dirty: null,
      untracked,
      repositoryFiles: null,
    };
  }
  const problems = check?.problems ?? [];
  const first = (code: RepositoryCheck['problems'][number]['code']) => problems.find((p) => p.code === code);
  const notRepo = first('not_a_repository');
  if (notRepo) {
    return {
      block: {
        message: `Forge: ${notRepo.message}. Attempts start from a commit: initialize a repository and commit the code first.`,
        actions: [{ label: 'Initialize Repository', action: 'initRepository' }],
      },
      dirty: null,
      untracked: null,
      repositoryFiles: null,
    };
  }
  const noCommit = first('no_commit');
  if (noCommit) {
    return {
      block: { message: `Forge: ${noCommit.message}.`, actions: [{ label: 'Open Source Control', action: 'openSourceControl' }] },
      dirty: null,
      untracked,
      repositoryFiles: null,
    };
  }
  const noTests = first('no_test_command');
  if (noTests) {
    return {
      block: { message: `Forge: ${noTests.message}.`, actions: [{ label: 'Edit Test Command', action: 'editTestCommand' }] },
      dirty: null,
      untracked,
      repositoryFiles: null,
    };
  }
  const tracked = first('tracked_changes');
  return {
    block: null,
    dirty: tracked
      ? {
          message: `${tracked.message}. Stash them first, or continue without them (Apply may then meet them).`,
          detail: tracked.paths.slice(0, 10).join('\n') + (tracked.paths.length > 10 ? '\n…' : ''),
        }
      : null,
    untracked,
    repositoryFiles: repositoryFilesQuestion(check),
  };
}

/** Pure: the question about the repository's unconfirmed files, or null when there is none. */
function repositoryFilesQuestion(check: RepositoryCheck | null): PreflightPlan['repositoryFiles'] {
  const asking = (check?.repository_files ?? []).filter((f) => f.state === 'read' && !f.confirmed && f.sha256);
  if (asking.length === 0) return null;
  return {
    message: `This repository's own ${asking.map((f) => f.file).join(' and ')} ask${asking.length === 1 ? 's' : ''} Forge to copy or share files with every attempt. They come with the repository, not from you: allow what they ask for?`,
    detail:
      asking.map((f) => `${f.file}: ${f.summary}`).join('\n') +
      '\n\nFiles that look like credentials (.env, keys) are never copied from .forgeinclude. A changed file is asked about again.',
    files: asking.map((f) => ({ file: f.file, sha256: f.sha256! })),
  };
}
