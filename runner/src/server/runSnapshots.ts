import type { AttemptSnapshot, CellSnapshot, RunSnapshot, RunSummary } from '../protocol/rpcFix.js';
import { patchSize } from '../repair/selectWinner.js';
import type { AttemptRow, CellRow, RunRow, RunStore } from '../store/runStore.js';

/** Store rows -> protocol snapshots. Everything a view shows comes from here, so a restarted runner shows the same. */
/** A run whose runner process is gone without finishing it is shown (and resumable) as interrupted; a cancelled one says so itself. */
export function runSummary(run: RunRow, runnerAlive: (pid: number) => boolean = () => true): RunSummary {
  const firstLine =
    run.issue
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  let error: string | null = null;
  if ((run.status === 'failed' || run.status === 'interrupted') && run.report_json) {
    try {
      error = (JSON.parse(run.report_json) as { error?: string }).error ?? null;
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
    error,
  };
}

export function attemptSnapshot(a: AttemptRow, winner: number | null, liveTurns: number): AttemptSnapshot {
  const v = a.verdict_json ? (JSON.parse(a.verdict_json) as { green: boolean; passed: number; failed: number }) : null;
  return {
    index: a.idx,
    attempt_id: a.attempt_id,
    temperature: a.temperature,
    status: a.status,
    turns: Math.max(a.turns, liveTurns),
    tokens: a.tokens,
    green: v ? v.green : null,
    passed: v ? v.passed : null,
    failed: v ? v.failed : null,
    diff_size: a.patch ? patchSize(a.patch) : 0,
    winner: winner === a.idx,
    error: a.error,
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
  };
}

/** The run as stored, plus the cells running right now (they reach the store when they return). */
export function runSnapshot(
  store: RunStore,
  runId: string,
  running: CellSnapshot[] = [],
  runnerAlive?: (pid: number) => boolean,
): RunSnapshot | null {
  const run = store.getRun(runId);
  if (!run) return null;
  const turns = store.turnCounts(runId);
  return {
    run: runSummary(run, runnerAlive),
    attempts: store.attempts(runId).map((a) => attemptSnapshot(a, run.winner_attempt, turns.get(a.idx) ?? 0)),
    cells: [...store.cells(runId).map(cellSnapshot), ...running.filter((c) => c.run_id === runId)],
  };
}
