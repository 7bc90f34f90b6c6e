/**
 * When to restart a runner that died: exponential backoff (0.5 s doubling, at most 30 s);
 * after 5 crashes within 2 minutes it stays down until the user restarts it, so a runner
 * that cannot start does not spin. Pure: the caller passes the crash times.
 */
export interface RestartDecision {
  restart: boolean;
  delayMs: number;
  /** Crashes counted in the window, this one included. */
  recentCrashes: number;
}

export const RESTART_WINDOW_MS = 120_000;
export const MAX_CRASHES_IN_WINDOW = 5;

export function decideRestart(crashTimes: readonly number[], now: number): RestartDecision {
  const recent = crashTimes.filter((t) => now - t <= RESTART_WINDOW_MS).length;
  if (recent >= MAX_CRASHES_IN_WINDOW) return { restart: false, delayMs: 0, recentCrashes: recent };
  return { restart: true, delayMs: Math.min(30_000, 500 * 2 ** Math.max(0, recent - 1)), recentCrashes: recent };
}
