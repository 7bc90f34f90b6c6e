// Test-harness code shipped in production on purpose: `forge-runner qualify` (a
// product command, see runner/src/instances/qualify/) proves crash convergence by arming these
// fault points in real runner processes, so they must live in the shipped runner. Inert unless
// FORGE_FAULT names a point (noFaults otherwise); the tests use them through qualify.

/**
 * Named points where qualification kills the runner (SIGKILL, no cleanup) to prove that a
 * restart converges. Armed only by FORGE_FAULT (comma-separated names); `drop_response`
 * does not kill but loses management's answer after it was recorded.
 */
export const FAULT_POINTS = [
  'cell_accepted', // the cell recorded the command and its pending effect; nothing submitted
  'ledger_dispatched', // management recorded the operation as dispatched; provider not called
  'provider_effect_done', // the provider made the effect; management has not recorded it
  'ledger_recorded', // management recorded the outcome; the cell has not heard it
  'enrolling', // the cell is enrolling; readiness not yet probed
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number] | 'drop_response';

export type FaultInjector = (point: FaultPoint) => void;

export class LostResponseError extends Error {
  override readonly name = 'LostResponseError';
}

export function faultsFromEnv(env: NodeJS.ProcessEnv = process.env): FaultInjector {
  const armed = new Set(
    (env.FORGE_FAULT ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  if (armed.size === 0) return () => undefined;
  return (point) => {
    if (!armed.has(point)) return;
    if (point === 'drop_response') {
      armed.delete(point);
      throw new LostResponseError('fault injected: the response was lost after management recorded it');
    }
    process.kill(process.pid, 'SIGKILL');
  };
}

export const noFaults: FaultInjector = () => undefined;
