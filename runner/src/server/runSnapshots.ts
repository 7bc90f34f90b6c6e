import { BrokenEnvironmentSchema } from '../protocol/fixReport.js';
import type { AttemptSnapshot, CellSnapshot, RunSnapshot, RunSummary } from '../protocol/rpcFix.js';
import { attemptReason } from '../repair/explainEnding.js';
import { explainRanking, type RankingExplained } from '../repair/explainRanking.js';
import { patchLines } from '../repair/selectWinner.js';
import { patchFromStore } from '../workspace/patchBytes.js';
import type { AttemptRow, CellRow, RunRow, RunStore } from '../store/runStore.js';
import { storedVerdict } from '../repair/verdicts/storedVerdict.js';
import type { Usage } from '../protocol/usage.js';
import { isBudgetStop, NO_USAGE } from '../repair/usage/usageAccounting.js';
import { cellTimes, runUsageOf, storedPrice, usageOf, wallBetween } from '../repair/usage/usageFigures.js';

/** The stored part applied, when it reads as one (a damaged value is shown as none). */
function appliedPart(json: string | null | undefined): RunSummary['applied_part'] {
  if (!json) return null;
  try {
    const p = JSON.parse(json) as { attempt?: unknown; files?: unknown };
    if (typeof p.attempt !== 'number' || !Array.isArray(p.files)) return null;
    return { attempt: p.attempt, files: p.files.filter((f): f is string => typeof f === 'string') };
  } catch {
    return null;
  }
}

/** Store rows -> protocol snapshots. Everything a view shows comes from here, so a restarted runner shows the same. */
/** A run whose runner process is gone without finishing it is shown (and resumable) as interrupted; a cancelled one says so itself. */
export function runSummary(run: RunRow, runnerAlive: (pid: number) => boolean = () => true): RunSummary {
  const firstLine =
    run.issue
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  let error: string | null = null;
  let environment: RunSummary['environment'] = null;
  let ending: string | null = null;
  if ((run.status === 'fixed' || run.status === 'not_fixed') && run.report_json) {
    try {
      const report = JSON.parse(run.report_json) as { ending?: unknown };
      ending = typeof report.ending === 'string' ? report.ending : null;
    } catch {
      ending = null;
    }
  }
  if ((run.status === 'failed' || run.status === 'interrupted') && run.report_json) {
    try {
      const report = JSON.parse(run.report_json) as { error?: string; environment?: unknown };
      error = report.error ?? null;
      // Only a report that says it in the protocol's words (an older or damaged one says nothing).
      const parsed = BrokenEnvironmentSchema.safeParse(report.environment);
      environment = parsed.success ? parsed.data : null;
    } catch {
      error = null;
    }
  }
  return {
    run_id: run.id,
    status: run.status === 'running' && !runnerAlive(run.runner_pid) ? 'interrupted' : run.status,
    created_at: run.created_at,
    updated_at: run.updated_at,
    repo: run.repo,
    base_commit: run.base_commit,
    issue_title: firstLine.replace(/^#+\s*/, '').slice(0, 120),
    test_cmd: run.test_cmd,
    provider: run.provider,
    image: run.image,
    model: run.model,
    attempts: run.attempts,
    winner_attempt: run.winner_attempt,
    review: run.status === 'fixed' ? (run.review ?? 'pending') : null,
    applied_part: run.review === 'applied' ? null : appliedPart(run.applied_part),
    applied_attempt: run.review === 'applied' ? (run.applied_attempt ?? null) : null,
    error,
    environment,
    ending,
  };
}

/**
 * Pure: how an attempt is shown, given how its run stands. A run that ended before an attempt
 * started (its tests could not run, an error) never will start it: skipped, not waiting. An
 * interrupted run's queued ones stay queued for Resume, and one that was running when its
 * runner died is not running any more: interrupted (a resume redoes it).
 */
export function shownAttemptStatus(stored: AttemptRow['status'], run: 'going' | 'ended' | 'interrupted'): AttemptSnapshot['status'] {
  if (run === 'ended' && stored === 'queued') return 'skipped';
  if (run === 'interrupted' && stored === 'running') return 'interrupted';
  return stored;
}

export function attemptSnapshot(
  a: AttemptRow,
  winner: number | null,
  liveTurns: number,
  ranking?: RankingExplained,
  run: 'going' | 'ended' | 'interrupted' = 'going',
  waitingForCell: number | null = null,
  usage?: Usage,
): AttemptSnapshot {
  const v = a.verdict_json ? storedVerdict(a.verdict_json) : null;
  const status = shownAttemptStatus(a.status, run);
  const lines = a.patch ? patchLines(a.patch) : { added: 0, removed: 0 };
  return {
    index: a.idx,
    attempt_id: a.attempt_id,
    temperature: a.temperature,
    // Its budget ran out: judged and kept like any finished attempt, shown as its own state.
    status: status === 'finished' && isBudgetStop(a.stop) ? 'budget' : status,
    turns: Math.max(a.turns, liveTurns),
    tokens: a.tokens,
    green: v ? v.green : null,
    // Held to the run's issue tests only when every attempt has ended: until then "green so far".
    ...(v?.green && v.provisional && run !== 'ended' ? { provisional: true } : {}),
    passed: v ? v.passed : null,
    failed: v ? v.failed : null,
    diff_size: lines.added + lines.removed,
    diff_lines: lines,
    winner: winner === a.idx,
    error: a.error,
    agrees_with: ranking?.agreesWith.get(a.idx) ?? [],
    rank: ranking?.rank.get(a.idx) ?? null,
    reason: v || a.error ? attemptReason(v, a.error) : null,
    could_not_run: v?.could_not_run ?? null,
    failing_before: v?.failing_before ?? [],
    ...(waitingForCell !== null && a.status === 'running' ? { waiting_for_cell: waitingForCell } : {}),
    ...(usage ? { usage } : {}),
    stop: a.stop,
  };
}

export function cellSnapshot(c: CellRow): CellSnapshot {
  return {
    cell_id: c.cell_id,
    run_id: c.run_id,
    attempt_index: c.attempt_idx,
    purpose: c.purpose,
    provider: c.provider,
    image: c.image,
    command: c.command,
    running: false,
    exit_code: c.exit_code,
    killed_by: c.killed_by,
    duration_ms: c.duration_ms,
    started_at: new Date(Date.parse(c.created_at) - c.duration_ms).toISOString(),
    ...(c.node ? { node: c.node } : {}),
  };
}

/** The run as stored, plus the cells running right now (they reach the store when they return). */
export function runSnapshot(
  store: RunStore,
  runId: string,
  running: CellSnapshot[] = [],
  runnerAlive?: (pid: number) => boolean,
  /** Attempt index -> cells ahead of its waiting cell (FixService knows; the store does not). */
  waiting: ReadonlyMap<number, number> = new Map(),
): RunSnapshot | null {
  const run = store.getRun(runId);
  if (!run) return null;
  const turns = store.turnCounts(runId);
  const attempts = store.attempts(runId);
  // Ranked once the run ended: while it goes on, attempts are still arriving.
  const ranking = run.status === 'running' ? undefined : rankAttempts(attempts);
  const summary = runSummary(run, runnerAlive);
  const state = summary.status === 'running' ? 'going' : summary.status === 'interrupted' ? 'interrupted' : 'ended';
  const cells = store.cells(runId);
  const usage = snapshotUsage(store, run, attempts, cells, state === 'going');
  const warnings = reportWarnings(run.report_json);
  return {
    run: summary,
    attempts: attempts.map((a) => {
      const shown = attemptSnapshot(
        a,
        run.winner_attempt,
        turns.get(a.idx) ?? 0,
        ranking,
        state,
        waiting.get(a.idx) ?? null,
        usage.attempts.get(a.idx),
      );
      const w = warnings.get(a.idx);
      return w && w.length > 0 ? { ...shown, review_warnings: w } : shown;
    }),
    cells: [...cells.map(cellSnapshot), ...running.filter((c) => c.run_id === runId)],
    ranking: ranking?.lines ?? [],
    usage: usage.run,
  };
}

/**
 * Each attempt's review warnings from the run's report (written when it ended): what the
 * verdict did not cover, such as its own test changes, must reach the views, not only the log.
 */
function reportWarnings(json: string | null): Map<number, string[]> {
  const out = new Map<number, string[]>();
  if (!json) return out;
  try {
    const report = JSON.parse(json) as { attempts?: { index?: unknown; review_warnings?: unknown }[] };
    for (const a of report.attempts ?? [])
      if (typeof a.index === 'number' && Array.isArray(a.review_warnings))
        out.set(a.index, a.review_warnings.filter((w): w is string => typeof w === 'string').slice(0, 20));
  } catch {
    // A damaged report shows no warnings; the run's own state still does.
  }
  return out;
}

/**
 * Time and tokens from the store: an attempt's wall time runs until it finished (or now, while
 * the run goes on); the run's is its report's duration once it ended, else from its creation.
 */
function snapshotUsage(
  store: RunStore,
  run: RunRow,
  attempts: AttemptRow[],
  cells: CellRow[],
  going: boolean,
): { attempts: Map<number, Usage>; run: Usage } {
  const tokens = store.attemptUsage(run.id);
  const times = cellTimes(cells);
  const price = storedPrice(run.settings_json);
  const now = Date.now();
  const byAttempt = new Map(
    attempts.map((a) => [
      a.idx,
      usageOf(
        wallBetween(a.started_at, a.finished_at ?? (going ? null : a.started_at), now),
        times.byAttempt.get(a.idx) ?? 0,
        tokens.get(a.idx) ?? NO_USAGE,
        price,
      ),
    ]),
  );
  let wall = wallBetween(run.created_at, going ? null : run.updated_at, now);
  if (!going && run.report_json) {
    try {
      const d = (JSON.parse(run.report_json) as { duration_ms?: unknown }).duration_ms;
      if (typeof d === 'number' && Number.isFinite(d)) wall = d;
    } catch {
      // A damaged report: the store's times stand.
    }
  }
  return { attempts: byAttempt, run: runUsageOf(wall, times.all, [...tokens.values()], price) };
}

/** The stored attempts ranked as the run ranked them (selectWinner over verdicts and patches). */
export function rankAttempts(attempts: AttemptRow[]): RankingExplained {
  return explainRanking(
    attempts.map((a) => ({
      index: a.idx,
      attemptId: a.attempt_id,
      verdict: a.status === 'finished' && a.verdict_json ? storedVerdict(a.verdict_json) : null,
      patch: patchFromStore(a.patch),
    })),
  );
}
