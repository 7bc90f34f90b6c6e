import { editorFix } from '../flows/runEnd.js';
import type { AttemptSnapshot, CellSnapshot, RunSummary } from '../../../runner/src/protocol/rpcFix.js';
import type { InstanceRow } from '../forgeState.js';
import { changedLines } from './changedLines.js';
import { localOffsetMinutes, shortTitle, startTimeLabel } from './runTitle.js';
import type { Usage } from '../../../runner/src/protocol/usage.js';
import { formatDuration, shortTokens, usageLine } from '../../../runner/src/protocol/usageWords.js';

/** How a tree row looks, decided from data alone (the tree providers turn it into a TreeItem). */
export interface RowView {
  label: string;
  description: string;
  tooltip: string;
  icon: string;
  /** A theme color id for the icon, or null for the default. */
  color: string | null;
  contextValue: string;
}

export function duration(ms: number | null): string {
  if (ms === null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Grey: what the user stopped is neither a failure nor a success. */
const STOPPED = 'disabledForeground';

/** Where a fixed run's review stands; a part applied while it stays open is said, not hidden behind "review". */
function fixedReview(r: RunSummary): string {
  if (r.review === 'pending' || r.review === null) return r.applied_part ? 'partly applied' : 'review';
  // The user may apply another attempt than the winner (a red one, after a warning): the row says which.
  if (r.review === 'applied' && r.applied_attempt != null && r.winner_attempt != null && r.applied_attempt !== r.winner_attempt)
    return `applied attempt ${r.applied_attempt}, not the winner`;
  return r.review;
}

/** `now` and the zone offset are parameters so tests can pin them; the view passes neither. */
export function runView(
  r: RunSummary,
  now: Date = new Date(),
  offsetMinutes: number = localOffsetMinutes(r.created_at),
  /** The run's time and tokens (its snapshot's), once loaded. */
  usage?: Usage,
): RowView {
  const state: Record<RunSummary['status'], [string, string | null, string]> = {
    running: ['sync~spin', null, 'running'],
    fixed: ['pass-filled', 'testing.iconPassed', `fixed · ${fixedReview(r)}`],
    not_fixed: ['circle-slash', 'testing.iconFailed', 'not fixed'],
    failed: ['error', 'errorForeground', 'failed'],
    interrupted: ['debug-pause', 'editorWarning.foreground', 'interrupted'],
    cancelled: ['debug-stop', STOPPED, 'cancelled'],
  };
  const [icon, color, text] = state[r.status];
  return {
    label: shortTitle(r.issue_title) || r.run_id,
    description: [
      startTimeLabel(r.created_at, now, offsetMinutes),
      text,
      `${r.attempts} on ${r.provider}`,
      ...usageBits(usage, r.status !== 'running'),
    ]
      .filter(Boolean)
      .join(' · '),
    tooltip: [
      r.issue_title,
      r.applied_part && r.review !== 'applied'
        ? `part of attempt ${r.applied_part.attempt} is in your checkout (${r.applied_part.files.join(', ')}); Undo Apply takes it back`
        : '',
      r.review === 'applied' && r.applied_attempt != null && r.applied_attempt !== r.winner_attempt
        ? `attempt ${r.applied_attempt} is in your checkout, not the winner (attempt ${r.winner_attempt}): its tests may not pass; Undo Apply takes it back`
        : '',
      `${r.run_id}: ${r.status}`,
      usage ? `run: ${usageLine(usage)}` : '',
      `repo ${r.repo} at ${r.base_commit.slice(0, 12)}`,
      `tests: ${r.test_cmd}`,
      `model ${r.model}`,
      r.ending ?? '',
      // The runner's own message names CLI flags (--install-cmd); the editor's words say the cause and its way out here.
      r.environment
        ? `the tests could not run on the base commit: ${r.environment.detail}. ${editorFix(r.environment.cause)}`
        : r.error
          ? `error: ${r.error}`
          : '',
    ]
      .filter(Boolean)
      .join('\n'),
    icon,
    color,
    // run.<status>[.<review>][.part]: .part when a part of an attempt is in the checkout (Undo Apply is offered).
    contextValue: `run.${r.status}${r.status === 'running' ? '' : r.review ? `.${r.review}` : ''}${r.review === 'pending' && r.applied_part ? '.part' : ''}`,
  };
}

/**
 * `hasWinner`: the attempt's run has a winner (an attempt can then be compared with it);
 * `closed`: the run was applied or discarded, so nothing of it is offered to apply.
 */
export function attemptView(a: AttemptSnapshot, hasWinner = false, closed = false): RowView {
  const turns = `${a.turns} ${a.turns === 1 ? 'turn' : 'turns'}`;
  const size = changedLines(a);
  let state: string;
  let icon: string;
  let color: string | null = null;
  if (a.status === 'queued') [state, icon] = ['queued', 'circle-outline'];
  // Its cell is queued for the machine behind other runs' cells: where it stands, not "running".
  else if (a.status === 'running' && a.waiting_for_cell != null)
    [state, icon] = [`waiting for a cell (${a.waiting_for_cell} ahead)`, 'watch'];
  else if (a.status === 'running') [state, icon] = ['running', 'sync~spin'];
  else if (a.status === 'cancelled') [state, icon, color] = ['cancelled', 'debug-stop', STOPPED];
  // Its runner died mid-way: shown as its run is (a resume redoes it).
  else if (a.status === 'interrupted') [state, icon, color] = ['interrupted', 'debug-pause', 'editorWarning.foreground'];
  else if (a.status === 'skipped') [state, icon, color] = ['skipped', 'debug-step-over', STOPPED];
  else if (a.status === 'failed') [state, icon, color] = ['error', 'error', 'errorForeground'];
  else if (a.winner) [state, icon, color] = ['winner', 'star-full', 'charts.yellow'];
  // Its token budget ran out: neither an error nor red; what it made was judged and is kept for review.
  else if (a.status === 'budget') [state, icon, color] = ['budget', 'dashboard', 'editorWarning.foreground'];
  // Green on the tests it made pass itself; the run's issue tests (known when every attempt has
  // ended) may still make it red, so it is not shown as a pass yet.
  else if (a.green && a.provisional) [state, icon, color] = ['green so far', 'pass', null];
  else if (a.green) [state, icon, color] = ['green', 'pass', 'testing.iconPassed'];
  // Its test runner died before reporting, twice: no verdict on its change, not "red".
  else if (a.could_not_run) [state, icon, color] = ['could not run', 'warning', 'editorWarning.foreground'];
  else [state, icon, color] = ['red', 'error', 'testing.iconFailed'];
  // A test runner that died before reporting gave no counts worth showing.
  const before = a.failing_before ?? [];
  const tests =
    a.passed !== null && !a.could_not_run
      ? ` · ${a.passed} passed, ${a.failed} failed${before.length > 0 ? ` (${before.length} ${a.provisional ? 'still failing as on the base commit' : 'failing before and after, not caused by this change'}: ${before.slice(0, 3).join(', ')}${before.length > 3 ? ', ...' : ''})` : ''}`
      : '';
  const soFar = a.provisional
    ? "\nGreen so far, on the tests it made pass. When every attempt has ended, the run's issue tests are known: if another attempt makes one of the tests still failing here pass, this one is red."
    : '';
  const agree = a.agrees_with.length > 0 ? ` · ${a.agrees_with.length + 1} agree` : '';
  const judged = a.status === 'finished' || a.status === 'budget';
  const changed = judged && a.diff_size > 0;
  // Its tests still ran on what it made: said beside "budget".
  const budgetTests =
    a.status === 'budget'
      ? ` (${a.stop === 'run_tokens' ? "the run's tokens spent" : a.stop === 'tokens' ? 'its tokens spent' : 'tokens spent'}${
          a.green !== null ? `; tests ${a.green ? 'green' : a.could_not_run ? 'could not run' : 'red'}` : ''
        })`
      : '';
  const spent = usageBits(a.usage, a.status !== 'running').join(' · ');
  return {
    label: `attempt ${a.index}`,
    // A queued or skipped attempt has not done anything to count.
    description:
      a.status === 'queued' || a.status === 'skipped'
        ? state
        : `${state} · ${turns}${spent ? ` · ${spent}` : ''}${judged ? ` · ${size}` : ''}${agree}`,
    tooltip: `${a.attempt_id} (temperature ${a.temperature}): ${state}${budgetTests}${tests}${a.rank !== null ? ` · ranked #${a.rank}` : ''}${a.usage ? `\n${usageLine(a.usage)}` : ''}${
      a.agrees_with.length > 0 ? `\nthe same change as attempt${a.agrees_with.length === 1 ? '' : 's'} ${a.agrees_with.join(', ')}` : ''
    }${soFar}${a.reason ? `\n${a.reason}` : a.error ? `\n${a.error}` : ''}${(a.review_warnings ?? []).map((w) => `\nnote: ${w}`).join('')}`,
    icon,
    color,
    // attempt.winner | attempt.changed[.comparable] | attempt, then .closed for a run applied or discarded: what its context menu offers.
    contextValue: `${a.winner ? 'attempt.winner' : changed ? `attempt.changed${hasWinner ? '.comparable' : ''}` : 'attempt'}${closed ? '.closed' : ''}`,
  };
}

/** Pure: "12.4k tok", "41 s" for a row's description (the time only once it ended: a running one's grows). */
function usageBits(u: Usage | undefined, ended: boolean): string[] {
  if (!u) return [];
  const tokens = u.turns > 0 ? shortTokens(u) : '';
  const time = ended && u.wall_ms !== null && u.wall_ms > 0 ? formatDuration(u.wall_ms) : '';
  return [tokens, time].filter(Boolean);
}

export function cellView(c: CellSnapshot): RowView {
  const where = `${c.provider}${c.image ? ` ${c.image}` : ''}${c.node ? ` on ${c.node}` : ''}`;
  const who = c.attempt_index === null ? '' : ` · attempt ${c.attempt_index}`;
  if (c.running) {
    return {
      label: `${c.purpose}${who}`,
      description: `${where} · running`,
      tooltip: c.command,
      icon: 'sync~spin',
      color: null,
      contextValue: 'cell.running',
    };
  }
  if (c.killed_by === 'cancel') {
    // Killed because the run was cancelled: its exit code (137) says nothing about the code it ran.
    return {
      label: `${c.purpose}${who}`,
      description: `${where} · ${duration(c.duration_ms)} · cancelled`,
      tooltip: `${c.command}\n${c.cell_id}\nstopped by the run's cancel (exit ${c.exit_code})`,
      icon: 'debug-stop',
      color: STOPPED,
      contextValue: 'cell',
    };
  }
  const ok = c.exit_code === 0;
  const [icon, color, why] = cellOutcome(c);
  return {
    label: `${c.purpose}${who}`,
    description: `${where} · ${duration(c.duration_ms)} · exit ${c.exit_code}${c.killed_by ? ` (${c.killed_by})` : ''}`,
    tooltip: `${c.command}\n${c.cell_id}${why ? `\n${why}` : ''}`,
    icon: ok ? 'pass' : icon,
    color: ok ? 'testing.iconPassed' : color,
    contextValue: 'cell',
  };
}

/**
 * A cell that exits non-zero is a failure only when its exit is a verdict: the baseline's
 * tests fail before any fix (that is the issue), and an agent's own test runs and commands are
 * steps of its work; a limit that killed a cell is a failure whatever its purpose.
 */
function cellOutcome(c: CellSnapshot): [string, string | null, string | null] {
  if (c.killed_by) return ['error', 'testing.iconFailed', `stopped by ${c.killed_by}`];
  if (c.purpose.startsWith('baseline'))
    return ['beaker', null, "the tests on the base commit: failing ones are the issue's, expected before a fix"];
  if (c.purpose.startsWith('run_tests') || c.purpose.startsWith('run_command') || c.purpose.startsWith('install'))
    return ['terminal', null, "a step of the attempt's work, not its verdict"];
  // Only the baseline's failing tests ran: one failing before and after exits 1 too; the whole suite decides.
  if (c.purpose.includes('_targeted')) return ['filter', null, "only the baseline's failing tests ran: the whole suite's run decides"];
  return ['error', 'testing.iconFailed', null];
}

export function instanceView(i: InstanceRow): RowView {
  const state = i.state ?? 'unknown';
  const icons: Record<string, [string, string | null]> = {
    ready: ['vm-running', 'testing.iconPassed'],
    stopped: ['vm-outline', null],
    failed: ['error', 'errorForeground'],
    unknown: ['question', 'editorWarning.foreground'],
    destroyed: ['trash', 'disabledForeground'],
  };
  const [icon, color] = icons[state] ?? ['sync~spin', null];
  return {
    label: i.instance_id,
    description: `${state} · gen ${i.generation}${i.provider ? ` · ${i.provider}` : ''}`,
    tooltip: `desired ${i.desired ?? '-'}, runtime ${i.runtime_state ?? '-'}`,
    icon,
    color,
    contextValue: 'instance',
  };
}
