import { z } from 'zod';

export const CgroupReportSchema = z
  .object({
    version: z.enum(['v1', 'v2']).nullable().describe('cgroup hierarchy used, null when none could be used.'),
    memory_max_bytes: z.number().int().nullable(),
    pids_max: z.number().int().nullable(),
    cpu_quota_cores: z.number().nullable(),
    reason: z.string().nullable().describe('Why a cgroup (or one of its controllers) is not enforced.'),
  })
  .strict();

export const RlimitReportSchema = z
  .object({
    cpu_s: z.number().int().nullable(),
    as_bytes: z.number().int().nullable(),
    nproc: z.number().int().nullable(),
    fsize_bytes: z.number().int().nullable(),
    nofile: z.number().int().nullable(),
  })
  .strict();

/** What a provider actually enforced (or can enforce) — never what it was asked for. */
export const IsolationReportSchema = z
  .object({
    mechanism: z.string().describe('e.g. "bubblewrap", "plain-subprocess", "docker", "qemu-tcg".'),
    degraded: z.boolean().describe('True when isolation is weaker than the provider is designed to give.'),
    namespaces: z.array(z.string()),
    net: z.enum(['none', 'host', 'allowlist']),
    filesystem: z.string().describe('What the command can see and write.'),
    user: z.string().describe('Who the command runs as, e.g. "uid 65532 (the dedicated cell user: the runner is root)".'),
    masked_paths: z.array(z.string()),
    rlimits: RlimitReportSchema,
    cgroup: CgroupReportSchema,
    warnings: z.array(z.string()),
  })
  .strict();

export type IsolationReport = z.infer<typeof IsolationReportSchema>;
export type CgroupReport = z.infer<typeof CgroupReportSchema>;
export type RlimitReport = z.infer<typeof RlimitReportSchema>;
