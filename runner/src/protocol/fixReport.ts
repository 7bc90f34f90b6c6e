import { z } from 'zod';
import { UsageSchema } from './usage.js';

export const VerdictSchema = z
  .object({
    exit_code: z.number().int(),
    framework: z.string().nullable(),
    passed: z.number().int(),
    failed: z.number().int(),
    skipped: z.number().int(),
    failing: z.array(z.string()),
    failing_complete: z
      .boolean()
      .describe('The failing list names every test that failed: the run finished, its log is whole, every counted failure is named.'),
    failing_incomplete: z.string().nullable().describe('Why the failing list may miss tests (null when it is whole).'),
    regressions: z.array(z.string()).describe('Tests that fail after the attempt and did not fail in the baseline.'),
    new_failing: z.array(z.string()).describe('Of the regressions, tests the baseline did not have (it named every test it ran).'),
    regressions_known: z.boolean(),
    regressions_unknown: z
      .string()
      .nullable()
      .describe('Why regressions could not be checked in full (null when regressions_known); the regressions listed are sure ones.'),
    hook_failures: z
      .array(z.object({ hook: z.string(), command: z.string(), reason: z.enum(['network']) }).strict())
      .describe(
        'Lifecycle hooks around the tests (npm posttest...) that failed for an environment reason after the tests passed: said, not counted against the tests.',
      ),
    green: z
      .boolean()
      .describe(
        "A fix: the issue's tests pass and every test failing now failed on the base commit too (not the issue's); with --strict, or when a failing list is not whole, exit 0 with nothing failing.",
      ),
    fixed: z.array(z.string()).default([]).describe("Of the baseline's failing tests, those this run shows passing."),
    failing_before: z
      .array(z.string())
      .default([])
      .describe(
        "Tests failing here that failed on the base commit too and are not the issue's: failing before and after, not caused by this change.",
      ),
    issue_tests: z
      .array(z.string())
      .default([])
      .describe("The issue's tests this verdict was held to: every one must pass (report.json's issue_tests says how they were chosen)."),
    provisional: z
      .boolean()
      .default(false)
      .describe(
        "Green so far on the tests it made pass itself: while the run goes on, the run's issue tests (known when every attempt is judged) may still make it red. Always false in a finished report.",
      ),
    could_not_run: z
      .string()
      .nullable()
      .describe(
        'The test runner died before reporting any result, on its first try and on a second on an empty machine (out of memory, a limit, a signal): why. Not a verdict on the change: never green, never ranked as failing tests.',
      ),
    reused_from: z
      .string()
      .nullable()
      .describe(
        "Set when no cell of its own ran for this verdict because an earlier run tested the very same tree: the attempt's own run_tests of turn N, or another attempt's verdict of the same change. Null when its own cell ran.",
      ),
    targeted: z
      .object({
        how: z.string().describe('How the tests were selected: "go test -run", "pytest node ids", "vitest -t"...'),
        tests: z.array(z.string()).describe("The baseline's failing tests the targeted run selected."),
        still_failing: z.array(z.string()).describe('Of those, the ones that failed again.'),
        seconds: z.number().describe("The targeted run's cell time."),
      })
      .strict()
      .nullable()
      .describe(
        "Set when the verdict is a targeted run's: only the baseline's failing tests ran, some failed again, so the attempt is red and the rest of the suite was not run (counts and regressions are that run's). Null when the verdict ran the whole suite.",
      ),
    egress_denied: z
      .array(
        z
          .object({
            host: z.string(),
            port: z.number().int(),
            count: z.number().int().describe('How many requests for it the proxy refused.'),
            refused_by: z
              .enum(['allow_net', 'deny_net'])
              .describe("allow_net: not in the allowlist; deny_net: the user's deny list names it."),
          })
          .strict(),
      )
      .default([])
      .describe(
        "What the runner's egress proxy refused the test cell, by destination (its CellResult's egress_denied): the tests tried to reach these and were not allowed. Empty without --allow-net (such a cell has no network at all).",
      ),
  })
  .strict();

export const BrokenEnvironmentSchema = z
  .object({
    cause: z.enum(['command_not_found', 'missing_module', 'no_tests', 'network', 'timeout', 'resources']),
    detail: z.string().describe('What happened, with the evidence.'),
    fix: z.string().describe('What to do.'),
  })
  .strict();

export const AttemptReportSchema = z
  .object({
    index: z.number().int(),
    attempt_id: z.string(),
    temperature: z.number(),
    status: z
      .enum(['finished', 'failed', 'budget'])
      .describe(
        "budget: its agent stopped because its token budget (tokens) or the run's (run_tokens) was spent; what it made was judged and kept for review.",
      ),
    stop: z.string().nullable().describe('Why the agent loop ended (finish, max_turns, deadline, tokens, run_tokens, ...).'),
    turns: z.number().int(),
    tokens: z.number().int(),
    verdict: VerdictSchema.nullable(),
    diff_size: z.number().int(),
    review_warnings: z
      .array(z.string())
      .describe(
        'Changes the review can only name, not show, although they are text files (by name, dotfiles, scripts): inspect them before applying.',
      ),
    omitted: z
      .array(z.object({ path: z.string(), reason: z.string() }).strict())
      .describe(
        'What the attempt changed that its patch leaves out (too large, not a regular file, a nested repository): neither reviewed nor applied.',
      ),
    generated: z
      .array(z.string())
      .default([])
      .describe(
        'New directories a tool marked as its cache (a CACHEDIR.TAG, or a .gitignore of `*` inside it): generated, not part of the patch, left out of review and Apply.',
      ),
    error: z.string().nullable(),
    usage: UsageSchema.optional().describe('Its wall time, cell time, model turns and tokens (runners before 0.3 wrote none).'),
  })
  .strict();

/** report.json of `forge-runner fix`: what was tried, what won, and why. */
export const FixReportSchema = z
  .object({
    run_id: z.string(),
    status: z.enum(['fixed', 'not_fixed', 'broken_environment']),
    repo: z.string(),
    base_commit: z.string(),
    test_cmd: z.string(),
    provider: z.string(),
    image: z.string(),
    model: z.string(),
    baseline: VerdictSchema,
    issue_tests: z
      .object({
        tests: z.array(z.string()),
        rule: z.enum(['named in the issue', 'made to pass by an attempt', 'whole suite (--strict)', 'none passed']),
      })
      .strict()
      .optional()
      .describe(
        "The baseline's failing tests every attempt was held to, and the rule that chose them: those the issue names; else those some attempt made pass; every one with --strict; every one when no attempt made any pass. Absent when no attempt was judged.",
      ),
    environment: BrokenEnvironmentSchema.nullable().describe(
      'Set when the tests could not run on the base commit (no attempt was judged): the cause and the way out.',
    ),
    dependencies: z
      .array(
        z
          .object({
            kind: z.string(),
            source: z.string(),
            target: z.string(),
            detail: z.string(),
            shared: z.string().describe('For people: "node_modules from the checkout, 232 packages, read-only + overlay".'),
          })
          .strict(),
      )
      .describe('Installed dependencies every cell of the run saw without a copy (README "Dependencies").'),
    attempts: z.array(AttemptReportSchema),
    winner: z
      .object({
        attempts: z.array(z.string()),
        agreement: z.number().int(),
        diff_size: z.number().int(),
        branch: z.string().nullable(),
        verdict: VerdictSchema,
      })
      .strict()
      .nullable(),
    best: z
      .object({ attempts: z.array(z.string()), diff_size: z.number().int(), verdict: VerdictSchema })
      .strict()
      .nullable()
      .describe('When nothing is fixed: the closest attempt.'),
    ground_truth: z
      .object({ applied: z.boolean(), conflicts: z.array(z.string()), verdict: VerdictSchema.nullable() })
      .strict()
      .nullable(),
    applied_to: z.string().nullable().describe('Where --apply / --branch put the winner.'),
    cells: z.number().int(),
    cell_nodes: z
      .array(z.object({ cell_id: z.string(), purpose: z.string(), attempt: z.number().int().nullable(), node: z.string() }).strict())
      .optional()
      .describe('Swarm runs: the node of each cell (with any node it was resubmitted from); absent for cells on the runner machine.'),
    duration_ms: z.number().int(),
    usage: UsageSchema.optional().describe("The run's wall time, every cell's time, and its attempts' turns and tokens summed."),
    ending: z
      .string()
      .optional()
      .describe(
        'The ending in one sentence with its reason: which attempt won and how, or why none did, attempt by attempt (runners before 0.2 wrote none).',
      ),
  })
  .strict();

export type FixReport = z.infer<typeof FixReportSchema>;
export type AttemptReport = z.infer<typeof AttemptReportSchema>;
