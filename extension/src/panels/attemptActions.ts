import type { AttemptActionName, AttemptActionStates, AttemptDetailsData } from '../../../runner/src/protocol/webviewMessages.js';

/**
 * Pure: which of the attempt details page's buttons apply to its attempt, and the check of the
 * page's action messages. The page is untrusted: a message names only an action; the run and
 * attempt are the panel's own, never taken from the message.
 */

/** The command each button runs (the same as the Attempts view's context menu), given the attempt's node. */
export const ATTEMPT_ACTION_COMMANDS: Readonly<Record<AttemptActionName, string>> = {
  viewDiff: 'forge.viewAttemptDiff',
  apply: 'forge.applyAttempt',
  applyPart: 'forge.applyPartOfAttempt',
  compareWithWinner: 'forge.compareWithWinner',
};

const NAMES = Object.keys(ATTEMPT_ACTION_COMMANDS) as AttemptActionName[];

/** Each button's state now: shown or not, and why it is disabled (null: enabled). */
export function attemptActionStates(d: Pick<AttemptDetailsData, 'run' | 'attempt'>): AttemptActionStates {
  const a = d.attempt;
  const judged = a.status === 'finished' || a.status === 'budget';
  const noChange = !judged ? 'The attempt has not finished.' : a.diff_size === 0 ? 'The attempt changed nothing.' : null;
  const review = d.run.review;
  const closed = review === 'applied' ? 'The run was already applied.' : review === 'discarded' ? 'The run was discarded.' : null;
  const winner = d.run.winner_attempt;
  return {
    viewDiff: { show: true, why: noChange },
    apply: { show: true, why: noChange ?? closed },
    applyPart: { show: true, why: noChange ?? closed },
    // Only beside another attempt's winning change.
    compareWithWinner: { show: !a.winner && winner !== null && winner !== a.index, why: noChange },
  };
}

/** The action an untrusted page message asks for, or null when it is not one (or not allowed now). */
export function pageAction(message: unknown, states: AttemptActionStates): AttemptActionName | null {
  if (typeof message !== 'object' || message === null) return null;
  const m = message as Record<string, unknown>;
  if (m.type !== 'action' || typeof m.action !== 'string') return null;
  const name = NAMES.find((n) => n === m.action);
  if (!name) return null;
  const state = states[name];
  return state.show && state.why === null ? name : null;
}
