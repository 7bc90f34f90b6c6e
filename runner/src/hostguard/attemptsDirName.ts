/**
 * Attempt worktrees live in the repository's git directory, `<git common dir>/forge-cells`:
 * never in the work tree, where a command running on your checkout could rename or link the
 * directory under the runner; every cell sees `.git` read-only. A module of its own: the
 * worktree claims of every cell need the name, not the git code around it.
 */
export const ATTEMPTS_DIR_NAME = 'forge-cells';
