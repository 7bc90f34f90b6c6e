import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CellLimits } from '../protocol/cellSpec.js';
import type { CgroupReport } from '../protocol/isolation.js';
import { parseKeyValueCounters, parseProcCgroup } from './cgroupFiles.js';

const MiB = 1024 * 1024;
const CPU_PERIOD_US = 100_000;
const GROUP_DIR = 'forge-cells';

/**
 * One cell's cgroup(s). Created (and joined by a launcher) before the cell's limits are
 * known; `configure` writes them when the cell is claimed, before its command starts.
 */
export interface CellCgroup {
  /** cgroup.procs files the launcher writes its own pid into. */
  readonly procsFiles: string[];
  configure(limits: CellLimits): CgroupReport;
  /** What happened during the cell: OOM kills and refused forks. */
  events(): { oomKills: number; pidsLimitHits: number };
  /** SIGKILLs everything in the cell's cgroup, until it is empty. */
  killAll(): Promise<void>;
  /** Empties the group and removes it. */
  release(): Promise<void>;
}

export interface CgroupSupport {
  version: 'v1' | 'v2' | null;
  memory: boolean;
  pids: boolean;
  cpu: boolean;
  reason: string | null;
  create(): CellCgroup;
}

/** The directories (one per hierarchy) of one cell's cgroup. */
interface CgroupDirs {
  procsFiles: string[];
  configure(limits: CellLimits): CgroupReport;
  counters(): { oomKills: number; pidsLimitHits: number };
  dirs: string[];
}

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * Finds a cgroup hierarchy the runner may create cell groups in. v2 needs a parent with the
 * controllers delegated; on hybrid machines (controllers on v1) the v1 hierarchies are used.
 */
export function detectCgroupSupport(root = CGROUP_ROOT): CgroupSupport {
  let own: Map<string, string>;
  try {
    own = parseProcCgroup(readFileSync('/proc/self/cgroup', 'utf8'));
  } catch {
    return unsupported('cannot read /proc/self/cgroup');
  }
  const v2 = tryV2(root, own);
  if (v2.support) return v2.support;
  const v1 = tryV1(root, own);
  if (v1.support) return v1.support;
  return unsupported(`${v2.reason}; ${v1.reason}`);
}

function unsupported(reason: string): CgroupSupport {
  return {
    version: null,
    memory: false,
    pids: false,
    cpu: false,
    reason,
    create: () => {
      throw new Error('cgroups unavailable: ' + reason);
    },
  };
}

/**
 * The next cell group's number in this process. One counter for the process, not one per
 * provider: every run of a long-lived runner has its own provider, and two overlapping runs
 * counting from 0 made the same names, so the second run's cells got no cgroup at all.
 */
let counter = 0;

/** Each cell gets fresh groups named "<runner pid>-<n>"; leftovers of a crashed runner are swept. */
function perCell(version: 'v1' | 'v2', cpu: boolean, parents: string[], makeDirs: (name: string) => CgroupDirs): CgroupSupport {
  for (const parent of parents) removeStaleGroups(parent);
  return {
    version,
    memory: true,
    pids: true,
    cpu,
    reason: null,
    create() {
      const d = makeDirs(`${process.pid}-${counter++}`);
      return {
        procsFiles: d.procsFiles,
        configure: (limits) => d.configure(limits),
        events: () => d.counters(),
        killAll: () => killLoop(d.dirs),
        release: async () => {
          await killLoop(d.dirs);
          await removeDirs(d.dirs);
        },
      };
    },
  };
}

/** Groups named "<pid>-<n>" whose runner is gone and which are empty: leftovers of a crash. */
function removeStaleGroups(parent: string): void {
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of entries) {
    const m = /^(\d+)-\d+$/.exec(name);
    if (!m || existsSync(`/proc/${m[1]}`)) continue;
    try {
      rmdirSync(join(parent, name));
    } catch {
      /* not empty or in use */
    }
  }
}

function tryV2(root: string, own: Map<string, string>): { support?: CgroupSupport; reason: string } {
  const mount = existsSync(join(root, 'cgroup.controllers')) ? root : join(root, 'unified');
  const controllersFile = join(mount, 'cgroup.controllers');
  if (!existsSync(controllersFile)) return { reason: 'no cgroup v2 hierarchy' };
  const ownPath = own.get('') ?? '/';
  const available = readFileSync(controllersFile, 'utf8').trim().split(/\s+/);
  const ownDir = join(mount, ownPath);
  let ownControllers: string[];
  try {
    ownControllers = readFileSync(join(ownDir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return { reason: `cgroup v2: cannot read ${ownDir}` };
  }
  if (!ownControllers.includes('memory') || !ownControllers.includes('pids')) {
    return { reason: `cgroup v2 has no memory/pids controllers here (${available.join(' ') || 'none'})` };
  }
  const parent = join(ownDir, GROUP_DIR);
  try {
    mkdirSync(parent, { recursive: true });
    const want = ['memory', 'pids', ...(ownControllers.includes('cpu') ? ['cpu'] : [])];
    // Only a cgroup without processes of its own may delegate (the "no internal processes" rule).
    writeFileSync(join(ownDir, 'cgroup.subtree_control'), want.map((c) => '+' + c).join(' '));
    writeFileSync(join(parent, 'cgroup.subtree_control'), want.map((c) => '+' + c).join(' '));
  } catch (e) {
    return {
      reason: `cgroup v2: cannot delegate controllers under ${ownDir} (${(e as Error).message.split('\n')[0]}); run the runner in its own delegated cgroup, e.g. systemd-run --scope -p Delegate=yes`,
    };
  }
  const cpu = ownControllers.includes('cpu');
  return { reason: '', support: perCell('v2', cpu, [parent], (name) => v2Dirs(join(parent, name), cpu)) };
}

function v2Dirs(dir: string, cpu: boolean): CgroupDirs {
  mkdirSync(dir);
  const read = (f: string) => parseKeyValueCounters(safeRead(join(dir, f)));
  return {
    procsFiles: [join(dir, 'cgroup.procs')],
    dirs: [dir],
    configure(limits) {
      const memoryMax = limits.memory_mib * MiB;
      writeFileSync(join(dir, 'memory.max'), String(memoryMax));
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
      writeFileSync(join(dir, 'pids.max'), String(limits.pids));
      let cpuQuota: number | null = null;
      if (cpu && limits.cpus !== undefined) {
        writeFileSync(join(dir, 'cpu.max'), `${Math.ceil(limits.cpus * CPU_PERIOD_US)} ${CPU_PERIOD_US}`);
        cpuQuota = limits.cpus;
      }
      return { version: 'v2', memory_max_bytes: memoryMax, pids_max: limits.pids, cpu_quota_cores: cpuQuota, reason: null };
    },
    counters: () => ({ oomKills: read('memory.events').get('oom_kill') ?? 0, pidsLimitHits: read('pids.events').get('max') ?? 0 }),
  };
}

function tryV1(root: string, own: Map<string, string>): { support?: CgroupSupport; reason: string } {
  const memMount = join(root, 'memory');
  const pidsMount = join(root, 'pids');
  if (!existsSync(join(memMount, 'cgroup.procs')) || !existsSync(join(pidsMount, 'cgroup.procs'))) {
    return { reason: 'no cgroup v1 memory and pids hierarchies' };
  }
  const parents = {
    memory: join(memMount, own.get('memory') ?? '/', GROUP_DIR),
    pids: join(pidsMount, own.get('pids') ?? '/', GROUP_DIR),
    cpu: join(root, 'cpu', own.get('cpu') ?? '/', GROUP_DIR),
  };
  try {
    mkdirSync(parents.memory, { recursive: true });
    mkdirSync(parents.pids, { recursive: true });
  } catch (e) {
    return { reason: `cgroup v1: cannot create ${GROUP_DIR} groups (${(e as Error).message.split('\n')[0]})` };
  }
  let cpu = false;
  try {
    if (existsSync(join(root, 'cpu', 'cgroup.procs'))) {
      mkdirSync(parents.cpu, { recursive: true });
      cpu = true;
    }
  } catch {
    cpu = false;
  }
  const allParents = cpu ? [parents.memory, parents.pids, parents.cpu] : [parents.memory, parents.pids];
  return { reason: '', support: perCell('v1', cpu, allParents, (name) => v1Dirs(parents, name, cpu)) };
}

function v1Dirs(parents: { memory: string; pids: string; cpu: string }, name: string, cpu: boolean): CgroupDirs {
  const mem = join(parents.memory, name);
  const pids = join(parents.pids, name);
  const cpuDir = join(parents.cpu, name);
  const dirs = cpu ? [pids, mem, cpuDir] : [pids, mem];
  for (const d of dirs) mkdirSync(d);
  return {
    procsFiles: dirs.map((d) => join(d, 'cgroup.procs')),
    dirs,
    configure(limits) {
      const memoryMax = limits.memory_mib * MiB;
      writeFileSync(join(mem, 'memory.limit_in_bytes'), String(memoryMax));
      // Without a memsw limit the cell could page out to swap instead of being stopped.
      const memsw = join(mem, 'memory.memsw.limit_in_bytes');
      if (existsSync(memsw)) {
        try {
          writeFileSync(memsw, String(memoryMax));
        } catch {
          /* swap accounting off */
        }
      }
      writeFileSync(join(pids, 'pids.max'), String(limits.pids));
      let cpuQuota: number | null = null;
      if (cpu && limits.cpus !== undefined) {
        writeFileSync(join(cpuDir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
        writeFileSync(join(cpuDir, 'cpu.cfs_quota_us'), String(Math.ceil(limits.cpus * CPU_PERIOD_US)));
        cpuQuota = limits.cpus;
      }
      return { version: 'v1', memory_max_bytes: memoryMax, pids_max: limits.pids, cpu_quota_cores: cpuQuota, reason: null };
    },
    counters: () => ({
      oomKills: parseKeyValueCounters(safeRead(join(mem, 'memory.oom_control'))).get('oom_kill') ?? 0,
      pidsLimitHits: parseKeyValueCounters(safeRead(join(pids, 'pids.events'))).get('max') ?? 0,
    }),
  };
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function members(dir: string): number[] {
  return safeRead(join(dir, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Kill until empty: a process can fork between our read and our kill, so repeat. */
async function killLoop(dirs: string[]): Promise<void> {
  for (let round = 0; round < 200; round++) {
    const pids = dirs.flatMap(members);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await sleep(round < 20 ? 1 : 20);
  }
}

async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let i = 0; i < 100; i++) {
      try {
        rmdirSync(dir);
        break;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || i === 99) throw e;
        await killLoop([dir]);
        await sleep(10);
      }
    }
  }
}
