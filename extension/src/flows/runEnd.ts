import type { RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import { shortTitle } from '../views/runTitle.js';
import { changedLines } from '../views/changedLines.js';

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
  | 'attemptLog'
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
  attemptLog: 'Open Test Log',
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
  // Every ending names its run: two runs' endings must not read alike ("Forge: fixed "Sum is wrong": attempt 1 won: ...").
  const named = run?.issue_title ? ` "${shortTitle(run.issue_title, 50)}"` : '';
  const forge = (outcome: string) => `Forge: ${outcome}${named}`;
  /** The runner's ending sentence without the outcome it starts with ("fixed: ", "not fixed: "). */
  const because = (outcome: string) => (run?.ending?.startsWith(`${outcome}: `) ? sentence(run.ending.slice(outcome.length + 2)) : null);
  if (finished.status === 'fixed') {
    const w = snap?.attempts.find((a) => a.winner);
    const said =
      because('fixed') ?? `attempt ${w?.index ?? 0} won (${w ? changedLines(w) : '0 lines'} changed, tests green on a fresh checkout).`;
    // Once applied, Apply would only fail: the review and the branch's removal are what is left.
    const applied = run?.review === 'applied';
    return {
      severity: 'info',
      message: `${forge('fixed')}: ${said}${applied ? ' It is applied to your working tree.' : ''}`,
      actions: applied ? act('review') : act('review', 'apply', 'discard'),
    };
  }
  if (finished.error === 'cancelled' || finished.status === 'cancelled') {
    return { severity: 'info', message: `${forge('run cancelled')}; its cells were stopped.`, actions: act('resume', 'discard') };
  }
  if (finished.status === 'interrupted') {
    return {
      severity: 'warning',
      message: `${forge('run interrupted')}: its runner stopped while it ran (the window closed, or the runner was killed). Resume goes on from the attempts that finished.`,
      actions: act('resume', 'showAttempts'),
    };
  }
  const env = run?.environment;
  if (env) {
    const byCause: Record<typeof env.cause, RunEndAction[]> = {
      command_not_found: ['installDependencies', 'editTestCommand', 'baselineLog'],
      missing_module: ['installDependencies', 'editTestCommand', 'baselineLog'],
      no_tests: ['editTestCommand', 'baselineLog'],
      network: ['editTestCommand', 'baselineLog'],
      timeout: ['cellTimeoutSetting', 'editTestCommand', 'baselineLog'],
      resources: ['baselineLog', 'showLog'],
    };
    return {
      severity: 'error',
      message: `${forge('not run')}: the tests could not run on the base commit, so no attempt was judged. ${sentence(env.detail)} ${EDITOR_FIX[env.cause]}`,
      actions: act(...byCause[env.cause]),
    };
  }
  if (finished.status === 'not_fixed') {
    const attempts = snap?.attempts ?? [];
    const index = snap ? closestAttempt(snap) : null;
    const closest = attempts.find((a) => a.index === index);
    const closestText = closest ? ` Closest: attempt ${closest.index} (${closest.reason ?? `${closest.failed} failing`}).` : '';
    const said = because('not fixed') ?? `none of the ${attempts.length || run?.attempts || ''} attempts passed the tests.${closestText}`;
    return {
      severity: 'warning',
      message: `${forge('not fixed')}: ${said}`,
      actions: act(...(closest ? (['attemptDetails'] as const) : []), 'attemptLog', 'editTestCommand', 'showAttempts'),
    };
  }
  return {
    severity: 'error',
    message: `${forge('the run did not finish')}: ${finished.error ?? run?.error ?? finished.status}`,
    actions: act('showLog', 'showAttempts'),
  };
}

/** Pure: the attempt a not-fixed run's "Attempt Details" opens (fewest failing tests, then smallest diff; one whose tests could not run is no candidate). */
export function closestAttempt(snap: RunSnapshot): number | null {
  const judged = snap.attempts.filter((a) => a.failed !== null && !a.could_not_run);
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
  resources: 'Start the run again when fewer runs overlap on this machine.',
};

/** Pure: the way out of a broken environment in the editor's terms. */
export function editorFix(cause: NonNullable<RunSnapshot['run']['environment']>['cause']): string {
  return EDITOR_FIX[cause];
}

function sentence(text: string): string {
  const t = text.trim();
  return t === '' || /[.!?]$/.test(t) ? t : `${t}.`;
}
