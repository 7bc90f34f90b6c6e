/**
 * The bounds and defaults of a fix run, in one place: the CLI, the RPC (fix/start) and the
 * extension's settings all read them from here, so `--attempts` and `forge.attempts` cannot
 * drift apart again.
 *
 * No zod here: the extension imports this at activation and zod must not load with it
 * (extension activation, npm run bench).
 */
export const FIX_LIMITS = {
  attempts: { min: 1, max: 64, default: 3 },
  temperature: { min: 0, max: 2, default: 0.7 },
  max_turns: { min: 1, max: 500, default: 30 },
  max_tokens: { min: 1, default: 200_000 },
  timeout_per_attempt_s: { min: 1, max: 86_400, default: 900 },
  cell_timeout_s: { min: 1, max: 86_400, default: 300 },
} as const;
