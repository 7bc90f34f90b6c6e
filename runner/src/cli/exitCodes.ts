/** The runner's process exit codes: scripts and CI depend on them. */
export const EXIT_OK = 0;
export const EXIT_INTERNAL = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_INTERRUPTED = 130;
