import { parseNetRule } from './netRule.js';
import * as z from './zodMini.js';

const MiB = 1024 * 1024;

/** Defaults a user gets when a CellSpec leaves a limit out. */
export const DEFAULT_LIMITS = {
  memory_mib: 2048,
  pids: 512,
  output_bytes: 256 * MiB,
  log_bytes: 8 * MiB,
} as const;

export const DEFAULT_TIMEOUT_S = 300;

/**
 * One allow_net or deny_net entry: HOST or HOST:PORT (netRule.ts has the grammar); a bad one is
 * refused with what is wrong and how to write it.
 */
export const netRuleEntry = z.string().check(
  z.superRefine((entry, ctx) => {
    const r = parseNetRule(entry);
    if ('error' in r) ctx.addIssue({ code: 'custom', message: r.error, input: entry });
  }),
  // The entry's shape for JSON Schema readers; the check above is the whole rule (and comes first).
  z.regex(/^\s*(\*\.)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?\s*$/, { message: 'must be HOST or HOST:PORT' }),
);

/** An integer in [min, max] with a default and a description (zod/mini spells each step out). */
const boundedInt = (min: number, max: number, fallback: number, description: string) =>
  z._default(z.int().check(z.minimum(min), z.maximum(max)), fallback).check(z.describe(description));

export const CellLimitsSchema = z.strictObject({
  memory_mib: boundedInt(
    16,
    1024 * 1024,
    DEFAULT_LIMITS.memory_mib,
    'Memory ceiling of the whole cell in MiB (cgroup memory limit; without a cgroup, RLIMIT_DATA per process).',
  ),
  pids: boundedInt(8, 4_194_304, DEFAULT_LIMITS.pids, 'Most processes and threads the cell may have at once.'),
  cpus: z
    .optional(z.number().check(z.positive(), z.maximum(1024)))
    .check(z.describe('CPU bandwidth in cores (cgroup cpu quota). Unset: no quota.')),
  output_bytes: boundedInt(
    0,
    2 ** 50,
    DEFAULT_LIMITS.output_bytes,
    'Most bytes the command may print (stdout+stderr) before it is killed with killed_by=output. 0 = no limit.',
  ),
  log_bytes: boundedInt(
    4096,
    1024 * MiB,
    DEFAULT_LIMITS.log_bytes,
    'Size cap of the full log file kept for parsers (head and tail are kept when it overflows).',
  ),
});

export const EnvNameSchema = z.string().check(
  z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
    message: 'environment variable names are letters, digits and underscores, not starting with a digit',
  }),
);

const noNul = (s: string) => !s.includes('\0');

/** An absolute, normalized path: no `..`, `.` or empty segments a check could read otherwise. */
const absolutePath = (what: string) =>
  z.string().check(
    z.minLength(2),
    z.maxLength(4096),
    z.refine(
      (p) =>
        p.startsWith('/') &&
        !p
          .split('/')
          .slice(1)
          .some((seg) => seg === '' || seg === '.' || seg === '..') &&
        noNul(p),
      {
        message: `${what} must be an absolute path without "." or ".." segments (e.g. /home/me/project)`,
      },
    ),
  );

export const SharedDependencySchema = z.strictObject({
  source: absolutePath('shared_deps source').check(
    z.describe('Host directory (installed dependencies of the checkout, a toolchain cache).'),
  ),
  target: absolutePath('shared_deps target').check(z.describe('Where it appears in the cell.')),
  layer: z
    ._default(z.enum(['overlay', 'read-only']), 'overlay')
    .check(
      z.describe(
        'overlay: writes go to a layer discarded with the cell (where the runner can mount one; else read-only). read-only: no layer.',
      ),
    ),
});

/**
 * Linux refuses to exec a program with one argument or environment entry over 128 KiB
 * (MAX_ARG_STRLEN), or with all of them over ARG_MAX: such a spec is bad input, said up front,
 * not a failure inside the cell. The total keeps room for the sandbox's own arguments.
 */
export const MAX_EXEC_STRING_BYTES = 128 * 1024 - 1;
export const MAX_EXEC_TOTAL_BYTES = 1024 * 1024;
const execString = (s: string) => Buffer.byteLength(s) <= MAX_EXEC_STRING_BYTES;

export const CellSpecSchema = z
  .strictObject({
    image: z
      ._default(z.string().check(z.maxLength(512)), '')
      .check(z.describe('Provider-specific image (Docker image, VM image). Empty for the host provider.')),
    cmd: z
      .union([
        z.string().check(
          z.refine((s) => s.trim().length > 0, { message: 'command must not be empty' }),
          z.refine(noNul, { message: 'command must not contain NUL bytes' }),
          z.refine(execString, {
            message: `command is longer than ${MAX_EXEC_STRING_BYTES} bytes, the most one program argument may be (Linux MAX_ARG_STRLEN); put it in a script file`,
          }),
          z.describe('A shell command line, run with /bin/sh -c.'),
        ),
        z
          .array(
            z.string().check(
              z.refine(noNul, { message: 'argv entries must not contain NUL bytes' }),
              z.refine(execString, {
                message: `argv entry is longer than ${MAX_EXEC_STRING_BYTES} bytes, the most one program argument may be (Linux MAX_ARG_STRLEN)`,
              }),
            ),
          )
          .check(
            z.minLength(1),
            z.refine((a) => (a[0] ?? '').length > 0, { message: 'argv[0] must not be empty' }),
            z.describe('An argv vector, executed directly without a shell.'),
          ),
      ])
      .check(z.describe('The one bounded command this cell runs.')),
    worktree: z
      .optional(
        z.string().check(
          z.minLength(1),
          z.refine((p) => p.startsWith('/'), { message: 'worktree must be an absolute path' }),
        ),
      )
      .check(z.describe('Absolute path of the git worktree mounted read-write. Unset: the cell runs in a private empty directory.')),
    mount_at: z
      .optional(absolutePath('mount_at'))
      .check(
        z.describe(
          "Where the worktree appears in the cell (needs worktree). Fix runs give the user's repository path, so absolute paths baked into installed tooling (node_modules/.bin, virtualenvs, editable installs) resolve to the attempt. Default: host cells its own path, docker and qemu cells /work.",
        ),
      ),
    shared_deps: z
      ._default(z.array(SharedDependencySchema).check(z.maxLength(32)), [])
      .check(
        z.describe(
          'Installed dependencies made available without copying: each host directory appears read-only at its target, with a discarded writable layer where the provider can make one.',
        ),
      ),
    capture_diff: z
      ._default(z.boolean(), true)
      .check(z.describe('Capture the git diff of the worktree against its HEAD after the command.')),
    timeout_s: z
      ._default(z.number().check(z.positive(), z.maximum(7 * 24 * 3600)), DEFAULT_TIMEOUT_S)
      .check(z.describe('Wall-clock budget in seconds; the whole process tree is killed when it runs out.')),
    allow_net: z
      ._default(z.union([z.literal(false), z.array(netRuleEntry).check(z.minLength(1))]), false)
      .check(
        z.describe(
          'false: no network. A list of HOST or HOST:PORT entries (*.example.com for its subdomains, [IPv6] in brackets): those destinations, through the egress proxy; an entry without a port allows every port.',
        ),
      ),
    deny_net: z
      ._default(z.array(netRuleEntry), [])
      .check(
        z.describe(
          'HOST or HOST:PORT entries (as allow_net) the egress proxy refuses even when allow_net names them: the deny list is checked first.',
        ),
      ),
    env: z
      ._default(
        z.record(EnvNameSchema, z.string().check(z.refine(noNul, { message: 'environment values must not contain NUL bytes' }))),
        {},
      )
      .check(z.describe('Variables added to the scrubbed allowlist environment.')),
    limits: z.prefault(CellLimitsSchema, {}),
    labels: z
      ._default(z.record(z.string().check(z.maxLength(128)), z.string().check(z.maxLength(1024))), {})
      .check(z.describe('Free-form labels recorded with the cell (e.g. run and attempt ids).')),
  })
  .check(
    z.superRefine((spec, ctx) => {
      if (spec.mount_at !== undefined && spec.worktree === undefined)
        ctx.addIssue({ code: 'custom', path: ['mount_at'], message: 'needs a worktree to mount' });
      for (const [name, value] of Object.entries(spec.env)) {
        if (Buffer.byteLength(`${name}=${value}`) > MAX_EXEC_STRING_BYTES) {
          ctx.addIssue({
            code: 'custom',
            path: ['env', name],
            message: `is longer than ${MAX_EXEC_STRING_BYTES} bytes, the most one environment entry may be (Linux MAX_ARG_STRLEN)`,
          });
        }
      }
      const words = typeof spec.cmd === 'string' ? [spec.cmd] : spec.cmd;
      const total = [...words, ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`)].reduce((n, w) => n + Buffer.byteLength(w) + 1, 0);
      if (total > MAX_EXEC_TOTAL_BYTES)
        ctx.addIssue({
          code: 'custom',
          path: ['cmd'],
          message: `command and environment are ${total} bytes together; a cell takes at most ${MAX_EXEC_TOTAL_BYTES} (Linux ARG_MAX, with room for the sandbox)`,
        });
    }),
  );

export type CellSpecInput = z.input<typeof CellSpecSchema>;
export type CellSpec = z.output<typeof CellSpecSchema>;
export type CellLimits = z.output<typeof CellLimitsSchema>;
export type SharedDependency = z.output<typeof SharedDependencySchema>;
