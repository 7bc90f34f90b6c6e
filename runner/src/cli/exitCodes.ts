/** The runner's process exit codes: scripts and CI depend on them. */
export const EXIT_OK = 0;
export const EXIT_INTERNAL = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_INTERRUPTED = 130;
/** instance/ledger commands: the operation was rejected (reason code printed). */
export const EXIT_REJECTED = 4;
/** instance commands: the operation failed, or the instance never became ready. */
export const EXIT_FAILED = 5;
/** instance commands: still in progress when the wait ended; `instance reconcile` resumes it. */
export const EXIT_PENDING = 6;
