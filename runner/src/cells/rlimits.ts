import type { CellSpec } from '../protocol/cellSpec.js';
import type { RlimitReport } from '../protocol/isolation.js';

const MiB = 1024 * 1024;
/** Largest single file a cell may write: keeps a runaway writer from filling the disk. */
export const FSIZE_BYTES = 8 * 1024 * MiB;
export const NOFILE = 65536;

export interface RlimitContext {
  cores: number;
  /** A cgroup enforces memory for the whole cell; without one, RLIMIT_DATA caps each process. */
  cgroupMemory: boolean;
  /** A pids cgroup enforces the process count. */
  cgroupPids: boolean;
  /** Processes the runner's uid already has: RLIMIT_NPROC counts them too. */
  uidProcessCount: number;
  /** The runner's own hard limits: an unprivileged process cannot raise past them. */
  hardLimits: HardLimits;
}

export interface HardLimits {
  cpu_s: number | null;
  data_bytes: number | null;
  nproc: number | null;
  fsize_bytes: number | null;
  nofile: number | null;
}

const PROC_LIMIT_NAMES: Record<string, keyof HardLimits> = {
  'Max cpu time': 'cpu_s',
  'Max data size': 'data_bytes',
  'Max processes': 'nproc',
  'Max file size': 'fsize_bytes',
  'Max open files': 'nofile',
};

/** Pure: /proc/self/limits -> hard limits (null = unlimited). */
export function parseProcLimits(text: string): HardLimits {
  const out: HardLimits = { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null };
  for (const line of text.split('\n')) {
    for (const [label, key] of Object.entries(PROC_LIMIT_NAMES)) {
      if (!line.startsWith(label + ' ')) continue;
      const fields = line.slice(label.length).trim().split(/\s+/);
      const hard = fields[1];
      out[key] = hard === undefined || hard === 'unlimited' ? null : Number(hard);
    }
  }
  return out;
}

function capAt(value: number | null, hard: number | null): number | null {
  if (value === null || hard === null) return value;
  return Math.min(value, hard);
}

/** Pure: which rlimits a cell gets. */
export function planRlimits(spec: CellSpec, ctx: RlimitContext): RlimitReport {
  const h = ctx.hardLimits;
  return {
    // A per-process backstop: one process cannot legitimately burn more CPU than wall time × cores.
    cpu_s: capAt(Math.ceil(spec.timeout_s * Math.max(1, ctx.cores)) + 1, h.cpu_s),
    // Never the address space (RLIMIT_AS): V8 reserves far more than it uses for wasm memories
    // and its heap (a 2 GiB cap made vitest die with "WebAssembly.instantiate(): Out of memory"),
    // as Go and the JVM do. RLIMIT_DATA counts only writable private memory actually mapped.
    data_bytes: capAt(ctx.cgroupMemory ? null : spec.limits.memory_mib * MiB, h.data_bytes),
    nproc: capAt(ctx.cgroupPids ? null : ctx.uidProcessCount + spec.limits.pids, h.nproc),
    fsize_bytes: capAt(FSIZE_BYTES, h.fsize_bytes),
    nofile: capAt(NOFILE, h.nofile),
  };
}

/**
 * Pure: the rlimits as bash `ulimit` flag/value pairs for the launcher (bash units: seconds,
 * 1024-byte blocks, KiB, counts). Limits are set soft and hard, so the cell cannot raise them.
 */
export function ulimitPairs(r: RlimitReport): string[] {
  const pairs: string[] = [];
  const add = (flag: string, v: number | null, unit = 1) => {
    if (v !== null) pairs.push(flag, String(Math.floor(v / unit)));
  };
  add('-t', r.cpu_s);
  add('-f', r.fsize_bytes, 1024);
  add('-n', r.nofile);
  add('-d', r.data_bytes, 1024);
  add('-u', r.nproc);
  return pairs;
}

/** Pure: the rlimits a container engine sets (Docker's HostConfig.Ulimits): cpu, fsize, nofile. */
export function engineUlimits(rl: RlimitReport): Array<{ Name: string; Soft: number; Hard: number }> {
  return [
    { Name: 'cpu', Soft: rl.cpu_s!, Hard: rl.cpu_s! },
    { Name: 'fsize', Soft: rl.fsize_bytes!, Hard: rl.fsize_bytes! },
    { Name: 'nofile', Soft: rl.nofile!, Hard: rl.nofile! },
  ];
}
