import * as z from './zodMini.js';

const nullableInt = () => z.nullable(z.int());

export const CgroupReportSchema = z.strictObject({
  version: z.nullable(z.enum(['v1', 'v2'])).check(z.describe('cgroup hierarchy used, null when none could be used.')),
  memory_max_bytes: nullableInt(),
  pids_max: nullableInt(),
  cpu_quota_cores: z.nullable(z.number()),
  reason: z.nullable(z.string()).check(z.describe('Why a cgroup (or one of its controllers) is not enforced.')),
});

export const RlimitReportSchema = z.strictObject({
  cpu_s: nullableInt(),
  data_bytes: nullableInt(),
  nproc: nullableInt(),
  fsize_bytes: nullableInt(),
  nofile: nullableInt(),
});

/** What a provider actually enforced (or can enforce) — never what it was asked for. */
export const IsolationReportSchema = z.strictObject({
  mechanism: z.string().check(z.describe('e.g. "bubblewrap", "plain-subprocess", "docker", "qemu-tcg".')),
  degraded: z.boolean().check(z.describe('True when isolation is weaker than the provider is designed to give.')),
  namespaces: z.array(z.string()),
  net: z.enum(['none', 'host', 'allowlist']),
  filesystem: z.string().check(z.describe('What the command can see and write.')),
  user: z.string().check(z.describe('Who the command runs as, e.g. "uid 65532 (the dedicated cell user: the runner is root)".')),
  masked_paths: z.array(z.string()),
  rlimits: RlimitReportSchema,
  cgroup: CgroupReportSchema,
  warnings: z.array(z.string()),
});

export type IsolationReport = z.infer<typeof IsolationReportSchema>;
export type CgroupReport = z.infer<typeof CgroupReportSchema>;
export type RlimitReport = z.infer<typeof RlimitReportSchema>;
