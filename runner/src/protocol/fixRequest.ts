import { z } from 'zod';
import { netRuleEntry } from './cellSpec.js';
import { FIX_LIMITS } from './fixLimits.js';
import { ModelPriceSchema } from './usage.js';

// Kept in a module without zod: the extension reads them on activation (extension/src/workspaceSettings.ts).
export { FIX_LIMITS };

const runId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._-]+$/, 'a run id (letters, digits, . _ -)');
const whole = (l: { min: number; max?: number; default: number }) =>
  (l.max === undefined ? z.number().int().min(l.min) : z.number().int().min(l.min).max(l.max)).default(l.default);

/**
 * One fix run as asked for. The fields fix/start accepts come first (the RPC picks them); the
 * rest only the CLI can set (outputs, the user's tree, a resume).
 */
export const FixRequestSchema = z
  .object({
    repo: z.string().min(1).max(4096),
    issue: z.string().min(1).max(200_000),
    model: z
      .string()
      .min(1)
      .max(4096)
      .describe('replay:FILE, openai[:MODEL], anthropic[:MODEL], or client:vscode-lm (the client answers model/reply).'),
    attempts: whole(FIX_LIMITS.attempts),
    provider: z.enum(['host', 'docker', 'qemu', 'swarm']).optional(),
    image: z.string().max(512).optional(),
    test_cmd: z.string().min(1).max(4096).optional(),
    install_cmd: z.string().min(1).max(4096).optional(),
    shared_deps: z
      .boolean()
      .default(true)
      .describe('Share the checkout\'s installed dependencies with every cell (README "Dependencies").'),
    temperature: z.number().min(FIX_LIMITS.temperature.min).max(FIX_LIMITS.temperature.max).default(FIX_LIMITS.temperature.default),
    max_turns: whole(FIX_LIMITS.max_turns),
    timeout_per_attempt_s: whole(FIX_LIMITS.timeout_per_attempt_s),
    cell_timeout_s: whole(FIX_LIMITS.cell_timeout_s),
    allow_dirty: z.boolean().default(false),
    include: z
      .array(z.string().min(1).max(4096))
      .max(64)
      .default([])
      .describe(
        "Untracked files of the checkout (globs) to copy into every attempt: the user's word, unlike the repository's .forgeinclude.",
      ),
    strict: z
      .boolean()
      .default(false)
      .describe(
        "Hold every attempt to the whole suite (exit 0, nothing failing) instead of the issue's tests passing with nothing else broken: a test that fails before and after then stops every fix.",
      ),
    share: z
      .array(z.string().min(1).max(4096))
      .max(32)
      .default([])
      .describe("More directories to share with every cell (inside the repository, or absolute): the user's word."),
    // CLI only.
    allow_net: z
      .array(netRuleEntry)
      .default([])
      .describe(
        'HOST or HOST:PORT entries every cell of the run may reach through the egress proxy (an entry without a port: every port).',
      ),
    deny_net: z
      .array(netRuleEntry)
      .default([])
      .describe(
        "HOST or HOST:PORT entries no cell of the run may reach, even when allow_net or the install step's registries name them: checked first.",
      ),
    max_tokens: whole(FIX_LIMITS.max_tokens),
    max_run_tokens: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'Model tokens (input + output) for the whole run, shared by its attempts; an attempt that finds it spent stops as "budget".',
      ),
    price: ModelPriceSchema.optional().describe("The user's price of the run's model, for a cost estimate; none: no cost is shown."),
    concurrency: z.number().int().min(1).max(FIX_LIMITS.attempts.max).optional(),
    reuse_verdicts: z
      .boolean()
      .default(true)
      .describe(
        "Take an earlier run of the same tree as a verdict (the attempt's last run_tests on its unchanged tree, or another attempt's verdict of the same change) instead of testing it again.",
      ),
    failing_first: z
      .boolean()
      .default(true)
      .describe(
        "Before an attempt's verdict runs the whole suite, run only the baseline's failing tests where the framework can select them: an attempt on which they fail again is red without the rest.",
      ),
    warm_caches: z
      .boolean()
      .default(true)
      .describe(
        "Give every cell after the baseline what the baseline cell compiled (Go's build cache), read-only with a private writable layer per cell, for this run only.",
      ),
    early_ground_truth: z
      .boolean()
      .default(true)
      .describe(
        "When an attempt runs its tests on a change, start that change's ground truth (a fresh checkout of the base with the patch, in a fresh cell) at once on an idle core, instead of after selection; it gives way to any cell that needs the core and is used only when the winner's patch is exactly the one it tested.",
      ),
    out_dir: z.string().min(1).optional(),
    apply: z.boolean().default(false),
    branch: z.string().min(1).optional(),
    allow_green_baseline: z.boolean().default(false),
    resume_run_id: runId
      .optional()
      .describe('Continue this run (cancelled, or its runner died): finished attempts are kept, the rest redone.'),
  })
  .strict();

export type FixRequest = z.output<typeof FixRequestSchema>;
export type FixRequestInput = z.input<typeof FixRequestSchema>;

/** The part of a FixRequest a client may send over fix/start. */
export const FixStartParamsSchema = FixRequestSchema.pick({
  repo: true,
  issue: true,
  model: true,
  attempts: true,
  provider: true,
  image: true,
  test_cmd: true,
  install_cmd: true,
  shared_deps: true,
  temperature: true,
  max_turns: true,
  timeout_per_attempt_s: true,
  cell_timeout_s: true,
  allow_dirty: true,
  include: true,
  share: true,
  strict: true,
  max_run_tokens: true,
  price: true,
}).strict();
export type FixStartParams = z.output<typeof FixStartParamsSchema>;
