import { z } from 'zod';
import { IsolationReportSchema } from './isolation.js';

export const ProviderNameSchema = z.enum(['host', 'docker', 'qemu', 'swarm']);
export type ProviderName = z.infer<typeof ProviderNameSchema>;

/** `cancel`: the caller's AbortSignal ended the cell (Ctrl-C, a cancelled run); `signal`: any other signal. */
export const KilledBySchema = z.enum(['timeout', 'memory', 'pids', 'output', 'signal', 'cancel']);
export type KilledBy = z.infer<typeof KilledBySchema>;

export const DiffFileSchema = z
  .object({
    path: z.string(),
    status: z.enum(['added', 'modified', 'deleted', 'renamed', 'type-changed']),
    binary: z.boolean(),
  })
  .strict();

export const WorktreeDiffSchema = z
  .object({
    patch: z
      .string()
      .describe(
        'Unified diff against the base commit, tracked and untracked files; binary files are named, not dumped. Ignore rules and attributes come from the base commit, never from files the cell wrote.',
      ),
    truncated: z
      .boolean()
      .describe('The patch text was cut at its size cap (the file list is still complete unless `incomplete` says otherwise).'),
    bytes: z.number().int().describe('Size of the full patch before capping (lower bound when truncated).'),
    files: z.array(DiffFileSchema).describe('Changed files, at most the listing cap; files_total counts them all.'),
    files_total: z.number().int().describe('How many files changed.'),
    omitted: z
      .array(z.object({ path: z.string(), reason: z.string() }).strict())
      .describe('Files left out of the change set (too large, not a regular file, nested repository): they are neither shown nor applied.'),
    warnings: z
      .array(z.string())
      .describe('Changes the review can only name, not show, although they are text files by name (e.g. a NUL byte in a .js file).'),
    incomplete: z
      .string()
      .nullable()
      .describe(
        'Why the capture could not look at everything (deadline, untracked-file or hashing budget); null when the change set is complete.',
      ),
  })
  .strict();
export type WorktreeDiff = z.infer<typeof WorktreeDiffSchema>;

export const NeutralizedEntrySchema = z
  .object({
    path: z.string(),
    found: z.enum(['setid', 'device', 'fifo', 'socket']).describe('setid: a file with the setuid or setgid bit.'),
    action: z.enum(['cleared', 'removed']).describe('cleared: the setuid/setgid bits were removed; removed: the entry was deleted.'),
  })
  .strict();

export const CellResultSchema = z
  .object({
    cell_id: z.string(),
    provider: ProviderNameSchema,
    image: z.string(),
    exit_code: z.number().int().describe('Exit status; 128+N when the command died of signal N.'),
    signal: z.string().nullable(),
    timed_out: z.boolean(),
    killed_by: KilledBySchema.nullable(),
    limits_hit: z.array(z.enum(['memory', 'pids', 'output', 'cpu_time'])),
    duration_ms: z.number().int(),
    output: z.string().describe('Head and tail of stdout+stderr (interleaved); a marker line shows where bytes were cut.'),
    output_truncated: z.boolean(),
    output_bytes: z.number().int().describe('Total bytes the command printed (counted even when discarded).'),
    full_output_path: z.string().describe('Capped file holding the log for parsers.'),
    diff: WorktreeDiffSchema.nullable(),
    neutralized: z
      .array(NeutralizedEntrySchema)
      .describe(
        'Entries the cell left in the worktree that must not reach the host as they are (setuid/setgid files, device nodes, FIFOs, sockets), and what the runner did to them.',
      ),
    isolation: IsolationReportSchema,
    labels: z.record(z.string(), z.string()),
    node: z
      .string()
      .nullable()
      .optional()
      .describe("Swarm cells: the node that ran the cell (hostname@address); absent for cells on the runner's machine."),
    retries: z
      .array(z.object({ node: z.string(), reason: z.string() }).strict())
      .optional()
      .describe('Swarm cells: earlier tries of this cell lost with their node, each resubmitted (at most once).'),
  })
  .strict();

export type CellResult = z.infer<typeof CellResultSchema>;
