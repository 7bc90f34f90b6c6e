import * as z from './zodMini.js';
import { IsolationReportSchema } from './isolation.js';

export const ProviderNameSchema = z.enum(['host', 'docker', 'qemu', 'swarm']);
export type ProviderName = z.infer<typeof ProviderNameSchema>;

/** `cancel`: the caller's AbortSignal ended the cell (Ctrl-C, a cancelled run); `signal`: any other signal. */
export const KilledBySchema = z.enum(['timeout', 'memory', 'pids', 'output', 'signal', 'cancel']);
export type KilledBy = z.infer<typeof KilledBySchema>;

export const DiffFileSchema = z.strictObject({
  path: z.string(),
  status: z.enum(['added', 'modified', 'deleted', 'renamed', 'type-changed']),
  binary: z.boolean(),
});

export const WorktreeDiffSchema = z.strictObject({
  patch: z
    .string()
    .check(
      z.describe(
        'Unified diff against the base commit, tracked and untracked files; binary files are named, not dumped. Ignore rules and attributes come from the base commit, never from files the cell wrote.',
      ),
    ),
  truncated: z
    .boolean()
    .check(z.describe('The patch text was cut at its size cap (the file list is still complete unless `incomplete` says otherwise).')),
  bytes: z.int().check(z.describe('Size of the full patch before capping (lower bound when truncated).')),
  files: z.array(DiffFileSchema).check(z.describe('Changed files, at most the listing cap; files_total counts them all.')),
  files_total: z.int().check(z.describe('How many files changed.')),
  omitted: z
    .array(z.strictObject({ path: z.string(), reason: z.string() }))
    .check(
      z.describe(
        'Files left out of the change set (too large, not a regular file, nested repository): they are neither shown nor applied.',
      ),
    ),
  generated: z.optional(
    z
      .array(z.string())
      .check(
        z.describe(
          'New directories a tool marked as its cache (a CACHEDIR.TAG, or a .gitignore of `*` inside it, as pytest writes): generated, not part of the change, neither shown nor applied.',
        ),
      ),
  ),
  warnings: z
    .array(z.string())
    .check(z.describe('Changes the review can only name, not show, although they are text files by name (e.g. a NUL byte in a .js file).')),
  incomplete: z
    .nullable(z.string())
    .check(
      z.describe(
        'Why the capture could not look at everything (deadline, untracked-file or hashing budget); null when the change set is complete.',
      ),
    ),
});
export type WorktreeDiff = z.infer<typeof WorktreeDiffSchema>;

export const NeutralizedEntrySchema = z.strictObject({
  path: z.string(),
  found: z.enum(['setid', 'device', 'fifo', 'socket']).check(z.describe('setid: a file with the setuid or setgid bit.')),
  action: z.enum(['cleared', 'removed']).check(z.describe('cleared: the setuid/setgid bits were removed; removed: the entry was deleted.')),
});

/** How many refused destinations a CellResult lists; attempts to others are only counted. */
export const EGRESS_DENIED_KEPT = 20;

export const EgressDenialSchema = z.strictObject({
  host: z.string().check(z.describe('The host as the cell asked for it (canonical form: lower case, an IPv6 address without brackets).')),
  port: z.int().check(z.minimum(1), z.maximum(65535)),
  count: z.int().check(z.minimum(1), z.describe('How many requests for this destination the proxy refused.')),
  first_at: z.iso.datetime().check(z.describe('When the proxy first refused it (UTC, ISO 8601).')),
  refused_by: z
    .enum(['allow_net', 'deny_net'])
    .check(z.describe('allow_net: the destination is not in the allowlist; deny_net: the deny list names it (checked first).')),
});
export type EgressDenial = z.infer<typeof EgressDenialSchema>;

export const CellResultSchema = z.strictObject({
  cell_id: z.string(),
  provider: ProviderNameSchema,
  image: z.string(),
  exit_code: z.int().check(z.describe('Exit status; 128+N when the command died of signal N.')),
  signal: z.nullable(z.string()),
  timed_out: z.boolean(),
  killed_by: z.nullable(KilledBySchema),
  limits_hit: z.array(z.enum(['memory', 'pids', 'output', 'cpu_time'])),
  duration_ms: z.int(),
  output: z.string().check(z.describe('Head and tail of stdout+stderr (interleaved); a marker line shows where bytes were cut.')),
  output_truncated: z.boolean(),
  output_bytes: z.int().check(z.describe('Total bytes the command printed (counted even when discarded).')),
  full_output_path: z.string().check(z.describe('Capped file holding the log for parsers.')),
  diff: z.nullable(WorktreeDiffSchema),
  neutralized: z
    .array(NeutralizedEntrySchema)
    .check(
      z.describe(
        'Entries the cell left in the worktree that must not reach the host as they are (setuid/setgid files, device nodes, FIFOs, sockets), and what the runner did to them.',
      ),
    ),
  worktree_withheld: z
    .optional(z.nullable(z.string()))
    .check(
      z.describe(
        'Why the worktree was not given back: the hazard walk after the cell could not finish (more entries than it checks, its deadline, an entry it cannot read), so setuid files or FIFOs may remain. Its top is then mode 0700 and owned by the runner; there is no diff. Null when it was checked whole.',
      ),
    ),
  egress_denied: z
    ._default(z.array(EgressDenialSchema).check(z.maxLength(EGRESS_DENIED_KEPT)), [])
    .check(
      z.describe(
        "What the runner's egress proxy refused this cell, one entry per destination (host and port) in the order first refused, at most 20. Empty for a cell without allow_net (it has no network at all, so nothing reaches the proxy to be refused).",
      ),
    ),
  egress_denied_more: z
    ._default(z.int().check(z.minimum(0)), 0)
    .check(z.describe('Refused requests for destinations past the first 20 (not listed in egress_denied).')),
  isolation: IsolationReportSchema,
  labels: z.record(z.string(), z.string()),
  node: z
    .optional(z.nullable(z.string()))
    .check(z.describe("Swarm cells: the node that ran the cell (hostname@address); absent for cells on the runner's machine.")),
  retries: z
    .optional(z.array(z.strictObject({ node: z.string(), reason: z.string() })))
    .check(z.describe('Swarm cells: earlier tries of this cell lost with their node, each resubmitted (at most once).')),
});

export type CellResult = z.infer<typeof CellResultSchema>;
