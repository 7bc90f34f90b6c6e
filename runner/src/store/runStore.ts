import { CellSlots } from './cellSlots.js';
import type { Db } from './openStore.js';

/**
 * 'cancelled': stopped on purpose (fix/cancel, Ctrl-C);
 * 'interrupted': stopped because its runner died or stopped (the window closed; older stores also wrote it for a cancel).
 * Both never finished and can be resumed.
 */
export type RunStatus = 'running' | 'fixed' | 'not_fixed' | 'failed' | 'interrupted' | 'cancelled';
/** 'cancelled': stopped mid-way by a cancel; 'skipped': never started because the run was cancelled first. */
export type AttemptStatus = 'queued' | 'running' | 'finished' | 'failed' | 'cancelled' | 'skipped';

export interface RunRow {
  id: string;
  created_at: string;
  updated_at: string;
  repo: string;
  base_commit: string;
  issue: string;
  test_cmd: string;
  provider: string;
  image: string;
  model: string;
  attempts: number;
  status: RunStatus;
  winner_attempt: number | null;
  baseline_json: string | null;
  report_json: string | null;
  runner_pid: number;
  install_cmd: string | null;
  review: 'pending' | 'applied' | 'discarded' | null;
  /** JSON of the run's budgets and policy as started (prepareRun.ts: RUN_SETTINGS); null in older stores. */
  settings_json: string | null;
  /** JSON {attempt, files}: a part of an attempt is in the checkout (Apply Part) and the run is still open; null otherwise. */
  applied_part?: string | null;
  /** The attempt a whole apply put in the checkout; null when none (or undone). */
  applied_attempt?: number | null;
}

export interface CellRow {
  run_id: string;
  attempt_idx: number | null;
  purpose: string;
  cell_id: string;
  provider: string;
  image: string;
  command: string;
  exit_code: number;
  killed_by: string | null;
  duration_ms: number;
  created_at: string;
  log: string | null;
  /** Swarm cells: the node that ran it, with any node it was resubmitted from; null elsewhere. */
  node: string | null;
}

export interface TurnRow {
  run_id: string;
  attempt_idx: number;
  turn_idx: number;
  response_json: string;
  tool_results_json: string;
  tokens: number;
  created_at: string;
  /** Null: not reported (and in runs recorded before usage was kept). */
  input_tokens: number | null;
  output_tokens: number | null;
  usage_estimated: number;
}

export interface AttemptRow {
  run_id: string;
  idx: number;
  attempt_id: string;
  temperature: number;
  status: AttemptStatus;
  turns: number;
  tokens: number;
  verdict_json: string | null;
  /** Bytes (BLOB); text in stores written before patches were kept as bytes. */
  patch: Buffer | string | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  /** Why its agent loop stopped (AgentOutcome.stop); 'tokens'/'run_tokens': its budget ran out. Null in older stores. */
  stop: string | null;
}

/** One turn's tokens as recorded (repair/usage's TurnUsage; null: not reported). */
interface TurnUsage {
  input: number | null;
  output: number | null;
  estimated: boolean;
}

/** An attempt's tokens summed from its turns (repair/usage's UsageTotals). */
interface UsageTotals {
  turns: number;
  input_tokens: number;
  output_tokens: number;
  unknown_turns: number;
  estimated: boolean;
}

const now = () => new Date().toISOString();

/** Runs, attempts, model turns and cell executions: everything needed to resume and audit. */
export class RunStore {
  constructor(private readonly db: Db) {}

  /** The machine's queue of cells in this store (the cell scheduler steps it). */
  cellSlots(): CellSlots {
    return new CellSlots(this.db);
  }

  createRun(
    run: Omit<
      RunRow,
      'created_at' | 'updated_at' | 'status' | 'winner_attempt' | 'baseline_json' | 'report_json' | 'review' | 'settings_json'
    > & {
      settings_json?: string | null;
    },
    temperatures: number[],
  ): void {
    this.db
      .transaction(() => {
        const t = now();
        this.db
          .prepare(
            `INSERT INTO runs (id, created_at, updated_at, repo, base_commit, issue, test_cmd, provider, image, model, attempts, status, runner_pid, install_cmd, settings_json)
                  VALUES (@id, @t, @t, @repo, @base_commit, @issue, @test_cmd, @provider, @image, @model, @attempts, 'running', @runner_pid, @install_cmd, @settings_json)`,
          )
          .run({ settings_json: null, ...run, t });
        const insert = this.db.prepare(`INSERT INTO attempts (run_id, idx, attempt_id, temperature, status) VALUES (?, ?, ?, ?, 'queued')`);
        temperatures.forEach((temp, i) => insert.run(run.id, i, `${run.id}-a${i}`, temp));
      })
      .immediate();
  }

  getRun(id: string): RunRow | undefined {
    return this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as RunRow | undefined;
  }

  listRuns(limit = 50): RunRow[] {
    return this.db.prepare('SELECT * FROM runs ORDER BY created_at DESC LIMIT ?').all(limit) as RunRow[];
  }

  attempts(runId: string): AttemptRow[] {
    return this.db.prepare('SELECT * FROM attempts WHERE run_id = ? ORDER BY idx').all(runId) as AttemptRow[];
  }

  setBaseline(runId: string, baseline: unknown): void {
    this.db.prepare('UPDATE runs SET baseline_json = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(baseline), now(), runId);
  }

  startAttempt(runId: string, idx: number): void {
    this.db
      .prepare(`UPDATE attempts SET status = 'running', started_at = ?, error = NULL WHERE run_id = ? AND idx = ?`)
      .run(now(), runId, idx);
  }

  finishAttempt(
    runId: string,
    idx: number,
    result: ({ verdict: unknown; patch: Buffer } | { error: string }) & { turns: number; tokens: number; stop?: string | null },
  ): void {
    if ('error' in result) {
      this.db
        .prepare(
          `UPDATE attempts SET status = 'failed', error = ?, turns = ?, tokens = ?, stop = ?, finished_at = ? WHERE run_id = ? AND idx = ?`,
        )
        .run(result.error, result.turns, result.tokens, result.stop ?? null, now(), runId, idx);
    } else {
      this.db
        .prepare(
          `UPDATE attempts SET status = 'finished', verdict_json = ?, patch = ?, turns = ?, tokens = ?, stop = ?, finished_at = ? WHERE run_id = ? AND idx = ?`,
        )
        .run(JSON.stringify(result.verdict), result.patch, result.turns, result.tokens, result.stop ?? null, now(), runId, idx);
    }
  }

  /** A finished attempt's verdict as the run finally holds it (issueTests.ts: held to the run's issue tests). */
  setAttemptVerdict(runId: string, idx: number, verdict: unknown): void {
    this.db
      .prepare(`UPDATE attempts SET verdict_json = ? WHERE run_id = ? AND idx = ? AND status = 'finished'`)
      .run(JSON.stringify(verdict), runId, idx);
  }

  recordTurn(runId: string, attemptIdx: number, turnIdx: number, response: unknown, toolResults: unknown, usage: TurnUsage): void {
    this.db
      .prepare(
        `INSERT OR REPLACE INTO model_turns (run_id, attempt_idx, turn_idx, response_json, tool_results_json, tokens, created_at, input_tokens, output_tokens, usage_estimated)
                              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        runId,
        attemptIdx,
        turnIdx,
        JSON.stringify(response),
        JSON.stringify(toolResults),
        (usage.input ?? 0) + (usage.output ?? 0),
        now(),
        usage.input,
        usage.output,
        usage.estimated ? 1 : 0,
      );
  }

  /**
   * Model usage per attempt, summed from its recorded turns (so an attempt still running shows
   * what it used so far). A turn with neither figure is unknown: older runs, endpoints without usage.
   */
  attemptUsage(runId: string): Map<number, UsageTotals> {
    const rows = this.db
      .prepare(
        `SELECT attempt_idx, count(*) AS turns, coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
                sum(CASE WHEN input_tokens IS NULL AND output_tokens IS NULL THEN 1 ELSE 0 END) AS unknown_turns,
                max(CASE WHEN input_tokens IS NULL AND output_tokens IS NULL THEN 0 ELSE usage_estimated END) AS estimated
           FROM model_turns WHERE run_id = ? GROUP BY attempt_idx`,
      )
      .all(runId) as (Omit<UsageTotals, 'estimated'> & { attempt_idx: number; estimated: number })[];
    return new Map(rows.map(({ attempt_idx, estimated, ...t }) => [attempt_idx, { ...t, estimated: estimated === 1 }]));
  }

  recordCell(
    runId: string,
    attemptIdx: number | null,
    purpose: string,
    cell: {
      cell_id: string;
      provider: string;
      image: string;
      exit_code: number;
      killed_by: string | null;
      duration_ms: number;
      output?: string;
      node?: string | null;
      retries?: { node: string; reason: string }[];
    },
    command: string,
  ): void {
    const node = cell.node
      ? `${cell.node}${cell.retries && cell.retries.length > 0 ? ` (resubmitted after ${cell.retries.map((r) => r.node).join(', ')} was lost)` : ''}`
      : null;
    this.db
      .prepare(
        `INSERT INTO cell_executions (run_id, attempt_idx, purpose, cell_id, provider, image, command, exit_code, killed_by, duration_ms, created_at, log, node)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        runId,
        attemptIdx,
        purpose,
        cell.cell_id,
        cell.provider,
        cell.image,
        command,
        cell.exit_code,
        cell.killed_by,
        cell.duration_ms,
        now(),
        cell.output ?? null,
        node,
      );
  }

  cells(runId: string, attemptIdx?: number): CellRow[] {
    return attemptIdx === undefined
      ? (this.db.prepare('SELECT * FROM cell_executions WHERE run_id = ? ORDER BY created_at, rowid').all(runId) as CellRow[])
      : (this.db
          .prepare('SELECT * FROM cell_executions WHERE run_id = ? AND attempt_idx = ? ORDER BY created_at, rowid')
          .all(runId, attemptIdx) as CellRow[]);
  }

  cell(runId: string, cellId: string): CellRow | undefined {
    return this.db.prepare('SELECT * FROM cell_executions WHERE run_id = ? AND cell_id = ?').get(runId, cellId) as CellRow | undefined;
  }

  turns(runId: string, attemptIdx: number): TurnRow[] {
    return this.db
      .prepare('SELECT * FROM model_turns WHERE run_id = ? AND attempt_idx = ? ORDER BY turn_idx')
      .all(runId, attemptIdx) as TurnRow[];
  }

  /** Turns recorded so far per attempt (an attempt in progress has not written its total yet). */
  turnCounts(runId: string): Map<number, number> {
    const rows = this.db.prepare('SELECT attempt_idx, count(*) AS n FROM model_turns WHERE run_id = ? GROUP BY attempt_idx').all(runId) as {
      attempt_idx: number;
      n: number;
    }[];
    return new Map(rows.map((r) => [r.attempt_idx, r.n]));
  }

  setReview(runId: string, review: 'pending' | 'applied' | 'discarded', appliedAttempt: number | null = null): void {
    this.db
      .prepare('UPDATE runs SET review = ?, applied_attempt = ?, updated_at = ? WHERE id = ?')
      .run(review, review === 'applied' ? appliedAttempt : null, now(), runId);
  }

  /** What part of an attempt the checkout holds while the run stays open (null: none, or it was undone). */
  setAppliedPart(runId: string, part: { attempt: number; files: string[] } | null): void {
    this.db.prepare('UPDATE runs SET applied_part = ?, updated_at = ? WHERE id = ?').run(part ? JSON.stringify(part) : null, now(), runId);
  }

  cellCount(runId: string): number {
    return (this.db.prepare('SELECT count(*) AS n FROM cell_executions WHERE run_id = ?').get(runId) as { n: number }).n;
  }

  finishRun(runId: string, status: RunStatus, winner: number | null, report: unknown): void {
    this.db
      .prepare('UPDATE runs SET status = ?, winner_attempt = ?, report_json = ?, updated_at = ? WHERE id = ?')
      .run(status, winner, JSON.stringify(report), now(), runId);
  }

  /**
   * The run's unfinished attempts were stopped (a cancel, or a baseline that ended the run
   * while they worked): one stopped mid-way is cancelled, one that never started is skipped.
   */
  stopAttempts(runId: string): void {
    this.db.transaction(() => this.markAttemptsStopped(runId)).immediate();
  }

  private markAttemptsStopped(runId: string): void {
    this.db.prepare(`UPDATE attempts SET status = 'cancelled', finished_at = ? WHERE run_id = ? AND status = 'running'`).run(now(), runId);
    this.db.prepare(`UPDATE attempts SET status = 'skipped' WHERE run_id = ? AND status = 'queued'`).run(runId);
  }

  /**
   * A cancelled run, with what each unfinished attempt got to: one stopped mid-way is
   * cancelled, one that never started is skipped. Finished and failed attempts stay as they are.
   */
  cancelRun(runId: string, report: unknown): void {
    this.db
      .transaction(() => {
        const t = now();
        this.markAttemptsStopped(runId);
        this.db
          .prepare(`UPDATE runs SET status = 'cancelled', winner_attempt = NULL, report_json = ?, updated_at = ? WHERE id = ?`)
          .run(JSON.stringify(report), t, runId);
      })
      .immediate();
  }

  /**
   * A run its runner stopped because the runner itself was stopping (the window closed, the
   * runner was told to quit): nobody chose to cancel it. Its running attempts are shown as
   * interrupted (attempts.status stays 'running' for a resume to redo), the rest wait.
   */
  interruptRun(runId: string, report: unknown): void {
    this.db
      .prepare(`UPDATE runs SET status = 'interrupted', winner_attempt = NULL, report_json = ?, updated_at = ? WHERE id = ?`)
      .run(JSON.stringify(report), now(), runId);
  }

  /**
   * A resumed run belongs to the new runner process from now on; the attempts it will redo
   * (every one not finished or failed) wait in the queue again instead of showing how the
   * last runner left them.
   */
  claimRun(runId: string, pid: number, settingsJson?: string): void {
    this.db
      .transaction(() => {
        const t = now();
        this.db.prepare(`UPDATE runs SET runner_pid = ?, status = 'running', updated_at = ? WHERE id = ?`).run(pid, t, runId);
        if (settingsJson !== undefined) this.db.prepare(`UPDATE runs SET settings_json = ? WHERE id = ?`).run(settingsJson, runId);
        this.db
          .prepare(
            `UPDATE attempts SET status = 'queued', started_at = NULL, finished_at = NULL WHERE run_id = ? AND status NOT IN ('finished', 'failed')`,
          )
          .run(runId);
      })
      .immediate();
  }

  /**
   * The user confirmed this content of a repository's own file (`forge-runner trust`, the
   * editor's prompt): what it asks for is used while the file keeps exactly these bytes.
   */
  confirmRepositoryFile(repo: string, file: string, sha256: string): void {
    this.db
      .prepare(`INSERT OR REPLACE INTO repo_consents (repo, file, sha256, granted_at) VALUES (?, ?, ?, ?)`)
      .run(repo, file, sha256, now());
  }

  isRepositoryFileConfirmed(repo: string, file: string, sha256: string): boolean {
    return this.db.prepare(`SELECT 1 FROM repo_consents WHERE repo = ? AND file = ? AND sha256 = ?`).get(repo, file, sha256) !== undefined;
  }

  /** Forgets every confirmation for the repository; returns how many there were. */
  revokeRepositoryFiles(repo: string): number {
    return this.db.prepare(`DELETE FROM repo_consents WHERE repo = ?`).run(repo).changes;
  }
}
