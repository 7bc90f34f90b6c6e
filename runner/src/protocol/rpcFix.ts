import { z } from 'zod';
import { HealthReportSchema } from './health.js';
import { BrokenEnvironmentSchema, VerdictSchema } from './fixReport.js';
import { FixStartParamsSchema } from './fixRequest.js';
import { UsageSchema } from './usage.js';

/**
 * JSON-RPC methods of `forge-runner serve --stdio` for Fix Issue in Cells (the extension's
 * Attempts and Cells views, review and health). State is pushed as notifications carrying
 * whole snapshots read from the store, so a client never polls and a restarted runner
 * answers with what the store recorded.
 */
const runId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._-]+$/, 'a run id (letters, digits, . _ -)');
const repoPath = z.string().min(1).max(4096);
/** Which attempt a review method acts on; absent: the run's winner. */
const attemptIndex = z.number().int().min(0).max(63).optional();

export const RunReviewSchema = z.enum(['pending', 'applied', 'discarded']);

export const RunSummarySchema = z
  .object({
    run_id: z.string(),
    status: z
      .enum(['running', 'fixed', 'not_fixed', 'failed', 'interrupted', 'cancelled'])
      .describe('interrupted: its runner died; cancelled: stopped on purpose. Both can be resumed (fix/resume).'),
    created_at: z.string(),
    updated_at: z.string(),
    repo: z.string(),
    base_commit: z.string(),
    issue_title: z.string().describe('First line of the issue, at most 120 characters.'),
    test_cmd: z.string(),
    provider: z.string(),
    image: z.string(),
    model: z.string(),
    attempts: z.number().int(),
    winner_attempt: z.number().int().nullable(),
    review: RunReviewSchema.nullable().describe('Only for fixed runs: the winner waits for review, was applied, or was discarded.'),
    applied_attempt: z
      .number()
      .int()
      .nullable()
      .optional()
      .describe('The attempt an apply put in the checkout (review applied), which may be another than the winner; null otherwise.'),
    applied_part: z
      .object({ attempt: z.number().int(), files: z.array(z.string()) })
      .nullable()
      .optional()
      .describe(
        'A part of an attempt is in the checkout (review/apply with a selection) while the run stays open; null when none or undone.',
      ),
    error: z.string().nullable(),
    environment: BrokenEnvironmentSchema.nullable().describe(
      'Set when the tests could not run on the base commit (the run ended before any attempt): the cause and the way out.',
    ),
    ending: z
      .string()
      .nullable()
      .describe('How the run ended and why, in one sentence (fixed or not fixed runs); null while it goes on or when it ended otherwise.'),
  })
  .strict();

export const AttemptSnapshotSchema = z
  .object({
    index: z.number().int(),
    attempt_id: z.string(),
    temperature: z.number(),
    status: z
      .enum(['queued', 'running', 'finished', 'failed', 'cancelled', 'skipped', 'interrupted', 'budget'])
      .describe(
        "cancelled: stopped mid-way by a cancel, or by a baseline that ended the run (attempts start with it); skipped: the run was cancelled before it started; interrupted: its runner died while it ran. A resume redoes all three. budget: its agent stopped because its or the run's token budget was spent; what it made was judged and is kept for review.",
      ),
    turns: z.number().int(),
    tokens: z.number().int(),
    green: z.boolean().nullable(),
    provisional: z
      .boolean()
      .optional()
      .describe(
        "Green so far, on the tests it made pass itself, while others of the baseline's still fail: the run's issue tests, known when every attempt has ended, may still make it red (absent from older runners).",
      ),
    passed: z.number().int().nullable(),
    failed: z.number().int().nullable(),
    diff_size: z.number().int().describe('Changed lines of the attempt patch (added + removed: what the ranking compares).'),
    diff_lines: z
      .object({ added: z.number().int(), removed: z.number().int() })
      .optional()
      .describe('The lines its patch adds and removes, as a user reads a diff (+1 −1 for one edited line); absent from older runners.'),
    winner: z.boolean(),
    error: z.string().nullable(),
    agrees_with: z
      .array(z.number().int())
      .describe('Other attempts that made the identical (normalized) change; filled once the run ended.'),
    rank: z.number().int().nullable().describe("1-based place of this attempt's change in the ranking; null when not ranked (yet)."),
    reason: z.string().nullable().describe('Why it is not green, in words (null when green or not judged yet).'),
    could_not_run: z
      .string()
      .nullable()
      .describe('Its test runner died before reporting, twice: why. Such an attempt is not ranked as failing tests.'),
    failing_before: z
      .array(z.string())
      .optional()
      .describe(
        "Tests failing in its verdict that failed on the base commit too and are not the issue's: not caused by its change, not held against it.",
      ),
    waiting_for_cell: z
      .number()
      .int()
      .nullable()
      .optional()
      .describe(
        "Its next cell waits for the machine's cell budget: the cells running or queued before it (absent or null when not waiting).",
      ),
    usage: UsageSchema.optional().describe('Its time and tokens so far (absent from older runners).'),
    review_warnings: z
      .array(z.string())
      .optional()
      .describe(
        "Once the run ended: what the review or the verdict did not cover (report.json's review_warnings), e.g. its own test changes not run.",
      ),
    stop: z
      .string()
      .nullable()
      .optional()
      .describe(
        "Why its agent stopped (finish, max_turns, deadline, tokens: its budget, run_tokens: the run's budget); null while it runs.",
      ),
  })
  .strict();

export const CellSnapshotSchema = z
  .object({
    cell_id: z.string().describe('Provider cell id; "running:<n>" for a cell that has not returned yet.'),
    run_id: z.string(),
    attempt_index: z.number().int().nullable(),
    purpose: z.string(),
    provider: z.string(),
    image: z.string(),
    command: z.string(),
    running: z.boolean(),
    exit_code: z.number().int().nullable(),
    killed_by: z.string().nullable().describe('As in CellResult: "cancel" when the run\'s cancel killed the cell.'),
    duration_ms: z.number().int().nullable(),
    started_at: z.string(),
    node: z.string().nullable().optional().describe('Swarm cells: the node that ran the cell (and any node it was resubmitted from).'),
  })
  .strict();

export const RunSnapshotSchema = z
  .object({
    run: RunSummarySchema,
    attempts: z.array(AttemptSnapshotSchema),
    cells: z.array(CellSnapshotSchema),
    ranking: z.array(z.string()).describe('Why the attempts rank as they do, in words with the numbers (empty while the run goes on).'),
    usage: UsageSchema.optional().describe("The run's time and its attempts' tokens so far (absent from older runners)."),
  })
  .strict();

export const ReviewFileSchema = z
  .object({
    path: z.string(),
    status: z.enum(['added', 'modified', 'deleted']),
  })
  .strict();

export const ApplyFileOutcomeSchema = z
  .object({
    path: z.string(),
    ok: z.boolean(),
    reason: z.string().nullable(),
  })
  .strict();

export const PatchHunkSchema = z
  .object({
    id: z.string(),
    header: z.string(),
    added: z.number().int(),
    removed: z.number().int(),
    old_start: z.number().int(),
    new_start: z.number().int(),
    new_count: z.number().int().optional().describe('Lines of the new side the hunk spans (from its header).'),
    first_change: z
      .string()
      .nullable()
      .optional()
      .describe('Its first added or removed line with its sign, at most 200 characters, for a preview (untrusted repository text).'),
  })
  .strict();

export const PatchFileSchema = z
  .object({
    id: z.string(),
    path: z.string(),
    whole: z.string().nullable().describe('Why the file goes whole (binary, new file, ...); null: its hunks can be chosen one by one.'),
    added: z.number().int(),
    removed: z.number().int(),
    hunks: z.array(PatchHunkSchema),
  })
  .strict();

/** Untrusted: ids are checked against the attempt's patch before anything is written. */
export const ApplySelectionSchema = z
  .object({
    files: z
      .array(z.string().regex(/^f\d{1,6}$/, 'a file id from review/hunks (f<file>), not a path'))
      .max(100_000)
      .optional(),
    hunks: z
      .array(z.string().regex(/^f\d{1,6}h\d{1,6}$/, 'a hunk id from review/hunks (f<file>h<hunk>)'))
      .max(100_000)
      .optional(),
  })
  .strict();

export const RepositoryProblemSchema = z
  .object({
    code: z.enum(['not_a_repository', 'no_commit', 'tracked_changes', 'no_test_command']),
    message: z.string().describe('One line: what is wrong and what to do.'),
    paths: z.array(z.string()).describe('For tracked_changes: the first changed paths.'),
  })
  .strict();

/** A file of the repository that asks the runner for something (.forgeinclude, .forge/config.json). */
export const RepositoryFileViewSchema = z
  .object({
    file: z.enum(['.forgeinclude', '.forge/config.json']),
    state: z.enum(['absent', 'refused', 'read']),
    sha256: z.string().nullable().describe('Of the content read; what repo/trust confirms.'),
    summary: z.string().describe('What it asks for, or why it is not read.'),
    confirmed: z.boolean().describe('The user confirmed this exact content: a run uses what it asks for.'),
  })
  .strict();

/** fix/check: what would stop a fix run, found before the issue is asked for. */
export const RepositoryCheckSchema = z
  .object({
    repo: z.string().nullable().describe('The top of the repository; null when the folder is not in one.'),
    problems: z.array(RepositoryProblemSchema),
    untracked: z
      .object({ count: z.number().int(), sample: z.array(z.string()) })
      .strict()
      .describe('Files git does not track: they do not stop a run, but the attempts (from HEAD) do not see them.'),
    test_cmd: z.string().nullable().describe('The test command a run would use (given or detected).'),
    install_cmd: z
      .string()
      .nullable()
      .describe("The detected stack's install command (npm ci, pip install -r ...), to suggest when dependencies are missing."),
    repository_files: z
      .array(RepositoryFileViewSchema)
      .describe("The repository's own requests: used by a run only once confirmed (repo/trust); the client asks the user."),
  })
  .strict();

/** runs/old: a run whose attempts nobody reviewed within the retention (workspace/oldAttempts.ts). */
export const OldRunSchema = z
  .object({
    run_id: z.string(),
    repo: z.string(),
    issue_title: z.string(),
    status: z.string(),
    updated_at: z.string(),
    age_s: z.number().int().describe('Seconds since the run last changed (ended, resumed).'),
    branches: z.array(z.string()),
    worktrees: z.array(z.string()),
  })
  .strict();
/** Ten years, as gc --older-than accepts. */
const MAX_RETENTION_S = 3650 * 86_400;

export const RPC_FIX_METHODS = {
  'fix/check': {
    params: z.object({ repo: repoPath, test_cmd: z.string().min(1).max(4096).optional() }).strict(),
    result: RepositoryCheckSchema,
  },
  'repo/trust': {
    params: z
      .object({
        repo: repoPath,
        files: z
          .array(z.object({ file: z.string().max(64), sha256: z.string().regex(/^[0-9a-f]{64}$/) }).strict())
          .max(2)
          .describe('What the user was shown and agreed to: a file whose content changed since is not confirmed.'),
      })
      .strict(),
    result: z.object({ confirmed: z.array(RepositoryFileViewSchema) }).strict(),
  },
  'repo/stash': {
    params: z.object({ repo: repoPath }).strict(),
    result: z.object({ stashed: z.boolean(), message: z.string().describe('What happened, e.g. the stash entry made.') }).strict(),
  },
  'fix/start': {
    params: FixStartParamsSchema,
    result: z.object({ run_id: z.string() }).strict(),
  },
  'fix/cancel': {
    params: z.object({ run_id: runId }).strict(),
    result: z.object({ cancelled: z.boolean().describe('False when the run is not in progress in this runner.') }).strict(),
  },
  'fix/resume': {
    params: z.object({ run_id: runId }).strict(),
    result: z
      .object({ run_id: z.string() })
      .strict()
      .describe(
        'Continues a cancelled or interrupted run in this runner, as fix --resume does: finished attempts kept, the rest redone; then fix/progress and fix/finished as for fix/start.',
      ),
  },
  'runs/list': {
    params: z.object({ limit: z.number().int().min(1).max(1000).default(20) }).strict(),
    result: z.array(RunSummarySchema),
  },
  'runs/show': {
    params: z.object({ run_id: runId }).strict(),
    result: RunSnapshotSchema,
  },
  'attempts/details': {
    params: z.object({ run_id: runId, index: z.number().int().min(0).max(63) }).strict(),
    result: z
      .object({
        run: RunSummarySchema,
        attempt: AttemptSnapshotSchema,
        verdict: VerdictSchema.nullable(),
        turns: z.array(
          z
            .object({
              turn: z.number().int(),
              content: z.string().nullable(),
              tokens: z.number().int(),
              input_tokens: z.number().int().nullable().optional().describe('Null: the endpoint reported none (or an older run).'),
              output_tokens: z.number().int().nullable().optional(),
              tool_calls: z.array(z.object({ tool: z.string(), arguments: z.unknown(), result: z.string() }).strict()),
            })
            .strict(),
        ),
        cells: z.array(CellSnapshotSchema),
        ranking: z.array(z.string()).describe("The run's ranking in words (RunSnapshot.ranking)."),
        generated: z
          .array(z.string())
          .optional()
          .describe("New directories a tool marked as its cache (pytest's .pytest_cache): left out of its patch (from the run's report)."),
      })
      .strict(),
  },
  'cells/log': {
    params: z.object({ run_id: runId, cell_id: z.string().min(1).max(200) }).strict(),
    result: z.object({ cell: CellSnapshotSchema, log: z.string().describe('The bounded head+tail log the cell returned.') }).strict(),
  },
  'cells/health': {
    params: z.object({}).strict(),
    result: HealthReportSchema,
  },
  'cells/gc': {
    params: z.object({ repo: repoPath }).strict(),
    result: z
      .object({
        items: z.array(z.object({ kind: z.string(), id: z.string(), action: z.string(), reason: z.string() })),
        notes: z.array(z.string()),
      })
      .strict(),
  },
  'review/files': {
    params: z.object({ run_id: runId, attempt: attemptIndex }).strict(),
    result: z
      .object({
        run_id: z.string(),
        attempt: z.number().int().describe('The attempt reviewed (the winner unless one was asked for).'),
        repo: z.string(),
        base_commit: z.string(),
        files: z.array(ReviewFileSchema),
      })
      .strict(),
  },
  'review/content': {
    params: z
      .object({ run_id: runId, attempt: attemptIndex, path: z.string().min(1).max(4096), side: z.enum(['base', 'attempt']) })
      .strict(),
    result: z
      .object({
        content: z.string().nullable().describe('Null when the file does not exist on that side, is binary or too large.'),
        note: z.string().nullable(),
      })
      .strict(),
  },
  'review/hunks': {
    params: z.object({ run_id: runId, attempt: attemptIndex }).strict(),
    result: z
      .object({
        run_id: z.string(),
        attempt: z.number().int(),
        repo: z.string(),
        files: z.array(PatchFileSchema),
      })
      .strict(),
  },
  'review/apply': {
    params: z
      .object({
        run_id: runId,
        attempt: attemptIndex,
        selection: ApplySelectionSchema.optional().describe('Apply only these files and hunks (ids from review/hunks); absent: all.'),
        merge: z
          .boolean()
          .optional()
          .describe('When the change does not apply as it is, merge it 3-way with your edits (conflicts left as markers, Undo restores).'),
        conflicts: z
          .enum(['markers', 'yours'])
          .optional()
          .describe(
            "With merge: a file whose merge conflicts gets conflict markers (default), or your lines where the two conflict and the attempt's elsewhere ('yours', for a client that opens a merge editor on it).",
          ),
      })
      .strict(),
    result: z
      .object({
        applied: z.boolean(),
        attempt: z.number().int(),
        repo: z.string(),
        files: z.array(ApplyFileOutcomeSchema),
        branch_removed: z.string().nullable().describe('The winner branch, deleted once its change is in the working tree.'),
        mode: z.enum(['clean', 'three-way', 'conflicts', 'none']).optional(),
        conflicts: z
          .array(
            z
              .object({
                path: z.string(),
                before: z.string().describe("The saved copy of your checkout's file (the merge editor's other side)."),
                theirs: z
                  .string()
                  .optional()
                  .describe("The saved copy of the side merged in: the attempt's file, or what the chosen part makes of the base."),
              })
              .strict(),
          )
          .optional(),
        left_out: z
          .array(z.string())
          .optional()
          .describe('A part applied: the hunks and files not chosen, one line each (the run stays pending).'),
        undo_id: z.string().nullable().optional().describe('review/undoApply with this id puts back what the checkout held.'),
      })
      .strict(),
  },
  'review/undoApply': {
    params: z.object({ run_id: runId, undo_id: z.string().min(1).max(40).optional() }).strict(),
    result: z
      .object({
        restored: z.array(z.string()),
        review: RunReviewSchema.nullable(),
        still_applied: z
          .object({ undo_id: z.string(), attempt: z.number().int(), files: z.array(z.string()) })
          .nullable()
          .optional()
          .describe('An earlier apply of the run is still in the checkout (a part applied before): undo it with this id.'),
      })
      .strict(),
  },
  'review/discard': {
    params: z.object({ run_id: runId }).strict(),
    result: z.object({ removed: z.array(z.string()) }).strict(),
  },
  'runs/old': {
    params: z
      .object({ older_than_s: z.number().positive().max(MAX_RETENTION_S).describe('Runs not reviewed for longer than this many seconds.') })
      .strict(),
    result: z
      .object({
        runs: z.array(OldRunSchema).describe('Oldest first; only runs with a branch or worktree left. Nothing is removed.'),
        orphans: z.array(z.object({ repo: z.string(), branch: z.string(), age_s: z.number().int() }).strict()),
        notes: z.array(z.string()),
      })
      .strict(),
  },
  'runs/discardOld': {
    params: z
      .object({
        run_ids: z.array(runId).min(1).max(1000),
        older_than_s: z
          .number()
          .positive()
          .max(MAX_RETENTION_S)
          .describe('Each run is checked again: still older than this, not reviewed, not running.'),
      })
      .strict(),
    result: z
      .object({
        results: z.array(
          z
            .object({
              run_id: z.string(),
              discarded: z.boolean(),
              removed: z.array(z.string()),
              reason: z.string().nullable().describe('Why it was left (it changed since it was listed) or what failed.'),
            })
            .strict(),
        ),
      })
      .strict(),
  },
} as const;

export type RpcFixMethod = keyof typeof RPC_FIX_METHODS;
export type RunSummary = z.infer<typeof RunSummarySchema>;
export type AttemptSnapshot = z.infer<typeof AttemptSnapshotSchema>;
export type CellSnapshot = z.infer<typeof CellSnapshotSchema>;
export type RunSnapshot = z.infer<typeof RunSnapshotSchema>;
export type ReviewFile = z.infer<typeof ReviewFileSchema>;
export type ApplySelection = z.infer<typeof ApplySelectionSchema>;
export type PatchFileListing = z.infer<typeof PatchFileSchema>;
export type RepositoryCheck = z.infer<typeof RepositoryCheckSchema>;
export type RepositoryProblem = z.infer<typeof RepositoryProblemSchema>;
export type RpcFixParams<M extends RpcFixMethod> = z.input<(typeof RPC_FIX_METHODS)[M]['params']>;
export type RpcFixResult<M extends RpcFixMethod> = z.output<(typeof RPC_FIX_METHODS)[M]['result']>;

/** Runner -> client notifications. */
export const RPC_FIX_NOTIFICATIONS = {
  'fix/progress': z.object({ run_id: z.string(), line: z.string() }).strict(),
  'fix/finished': z
    .object({
      run_id: z.string(),
      status: RunSummarySchema.shape.status,
      error: z.string().nullable().describe('One line when the run could not finish (bad input found late, cancelled, internal).'),
    })
    .strict(),
  'runs/changed': RunSnapshotSchema,
  'cells/changed': z.object({ running: z.array(CellSnapshotSchema) }).strict(),
} as const;
export type RpcFixNotification = keyof typeof RPC_FIX_NOTIFICATIONS;

/**
 * Runner -> client request, for a model that lives in the client (VS Code's language model
 * API): the runner's agent loop asks, the extension answers with the model's reply.
 */
export const ModelReplyRequestSchema = z.object({
  attempt_index: z.number().int(),
  turn_index: z.number().int(),
  temperature: z.number(),
  messages: z.array(
    z.object({
      role: z.enum(['system', 'user', 'assistant', 'tool']),
      content: z.string(),
      tool_call_id: z.string().optional(),
      tool_calls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) })).optional(),
    }),
  ),
  tools: z.array(z.object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) })),
});
export const ModelReplySchema = z
  .object({
    content: z.string().nullable(),
    tool_calls: z
      .array(z.object({ id: z.string().min(1).max(200), name: z.string().min(1).max(200), arguments: z.record(z.string(), z.unknown()) }))
      .max(64),
    tokens: z.number().int().min(0).describe('Input plus output tokens (kept for older clients; usage says more).'),
    usage: z
      .object({
        input: z.number().int().min(0).max(100_000_000).nullable(),
        output: z.number().int().min(0).max(100_000_000).nullable(),
        estimated: z.boolean().describe("The figures are the client's estimate (VS Code's countTokens), not the provider's count."),
      })
      .strict()
      .optional()
      .describe('Input and output tokens of this turn, each null when not known; absent: not reported.'),
  })
  .strict();
export const REQUEST_MODEL_REPLY = 'model/reply';
