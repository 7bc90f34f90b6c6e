import type { RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';

/** What a button at the end of a run does (announceRunEnd.ts carries it out). */
export type RunEndAction =
  | 'review'
  | 'apply'
  | 'discard'
  | 'showAttempts'
  | 'baselineLog'
  | 'attemptDetails'
  | 'editTestCommand'
  | 'installDependencies'
  | 'cellTimeoutSetting'
  | 'showLog'
  | 'resume';

export interface RunEndView {
  severity: 'info' | 'warning' | 'error';
  message: string;
  /** In the order shown; VS Code shows each as a button of the notification. */
  actions: { label: string; action: RunEndAction }[];
}

const LABELS: Record<RunEndAction, string> = {
  review: 'Review',
  apply: 'Apply',
  discard: 'Discard',
  showAttempts: 'Show Attempts',
  baselineLog: 'Open Baseline Log',
  attemptDetails: 'Attempt Details',
  editTestCommand: 'Edit Test Command',
  installDependencies: 'Install Dependencies…',
  cellTimeoutSetting: 'Open Settings',
  showLog: 'Show Log',
  resume: 'Resume',
};

const act = (...actions: RunEndAction[]) => actions.map((action) => ({ label: LABELS[action], action }));

/**
 * Pure: the notification at the end of a run, from how it finished and what the store says
 * of it. Every outcome offers a next step: a fixed run its review, a red one its evidence, a
 * broken environment the cause in words and the fix as buttons.
 */
export function describeRunEnd(finished: { status: string; error: string | null }, snap: RunSnapshot | null): RunEndView {
  const run = snap?.run;
  if (finished.status === 'fixed') {
    const w = snap?.attempts.find((a) => a.winner);
    return {
      severity: 'info',
      message: `Forge: fixed. Attempt ${w?.index ?? '?'} won (${w?.diff_size ?? 0} changed lines, tests green on a fresh checkout).`,
      actions: act('review', 'apply', 'discard'),
    };
  }
  if (finished.error === 'cancelled' || finished.status === 'cancelled') {
    return { severity: 'info', message: 'Forge: run cancelled; its cells were stopped.', actions: act('resume', 'discard') };
  }
  const env = run?.environment;
  if (env) {
    const byCause: Record<typeof env.cause, RunEndAction[]> = {
      command_not_found: ['installDependencies', 'editTestCommand', 'baselineLog'],
      missing_module: ['installDependencies', 'editTestCommand', 'baselineLog'],
      no_tests: ['editTestCommand', 'baselineLog'],
      network: ['editTestCommand', 'baselineLog'],
      timeout: ['cellTimeoutSetting', 'editTestCommand', 'baselineLog'],
    };
    return {
      severity: 'error',
      message: `Forge: the tests could not run on the base commit, so no attempt was started. ${sentence(env.detail)} ${EDITOR_FIX[env.cause]}`,
      actions: act(...byCause[env.cause]),
    };
  }
  if (finished.status === 'not_fixed') {
    const attempts = snap?.attempts ?? [];
    const index = snap ? closestAttempt(snap) : null;
    const closest = attempts.find((a) => a.index === index);
    const closestText = closest ? ` Closest: attempt ${closest.index} (${closest.failed} failing, ${closest.passed} passing).` : '';
    return {
      severity: 'warning',
      message: `Forge: not fixed: none of the ${attempts.length || run?.attempts || ''} attempts passed the tests.${closestText}`,
      actions: act('showAttempts', 'baselineLog', ...(closest ? (['attemptDetails'] as const) : [])),
    };
  }
  return {
    severity: 'error',
    message: `Forge: the run did not finish: ${finished.error ?? run?.error ?? finished.status}`,
    actions: act('showLog', 'showAttempts'),
  };
}

/** Pure: the attempt a not-fixed run's "Attempt Details" opens (fewest failing tests, then smallest diff). */
export function closestAttempt(snap: RunSnapshot): number | null {
  const judged = snap.attempts.filter((a) => a.failed !== null);
  return [...judged].sort((a, b) => (a.failed ?? 0) - (b.failed ?? 0) || a.diff_size - b.diff_size)[0]?.index ?? null;
}

/**
 * The way out in the editor's terms: the runner's own fix text names CLI flags (--install-cmd,
 * --test-cmd) the user of the editor cannot pass; the buttons are the editor's flags.
 */
const EDITOR_FIX: Record<NonNullable<RunSnapshot['run']['environment']>['cause'], string> = {
  command_not_found: "Install the project's dependencies in your checkout, or set a test command that exists.",
  missing_module: "Install the project's dependencies in your checkout (cells share them), or set another test command.",
  no_tests: "Set a test command that runs this project's tests.",
  network: 'Cells have no network: use a test command that needs none (or install what it downloads first).',
  timeout: 'Raise the cell timeout, or narrow the test command to the tests of this issue.',
};

function sentence(text: string): string {
  const t = text.trim();
  return t === '' || /[.!?]$/.test(t) ? t : `${t}.`;
}
