import type { CellSpec } from '../../protocol/cellSpec.js';
import type { IsolationReport } from '../../protocol/isolation.js';
import { SWARM_WRAPPER_CAPABILITIES } from './swarmServiceSpec.js';

/** Pure: what a swarm cell's isolation is, for its result and `health` (no spec: the provider's own). */
export function describeSwarmIsolation(
  limits: CellSpec['limits'] | null,
  rlimits: IsolationReport['rlimits'] | null,
  cellUid: number,
  /** allowlist: the cell's own overlay, reaching only the runner's egress proxy through the relay. */
  net: 'none' | 'allowlist' = 'none',
): IsolationReport {
  return {
    mechanism: 'swarm',
    degraded: false,
    namespaces: ['mount', 'pid', 'ipc', 'uts', 'net', 'cgroup'],
    net,
    filesystem:
      "image root with the base tree as a layer (container layer discarded with the task); the worktree is a copy on the node (the attempt's changes written in, changed files sent back); private tmpfs /tmp unless the worktree lives there; nothing mounted from the runner; never an engine socket" +
      (net === 'allowlist'
        ? "; network: an internal overlay of the cell's own whose only other member is the runner's egress relay (the proxy checks its allowlist)"
        : ''),
    user: `uid ${cellUid} (the dedicated cell user) with no_new_privs; the wrapper around it is root with only ${SWARM_WRAPPER_CAPABILITIES.join(', ')}`,
    masked_paths: [],
    rlimits: rlimits ?? { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
    cgroup: {
      version: null,
      memory_max_bytes: limits ? limits.memory_mib * 1024 * 1024 : null,
      pids_max: limits ? limits.pids : null,
      cpu_quota_cores: limits?.cpus ?? null,
      reason: "enforced by the node's engine (Swarm resource limits); its cgroup version is the node's",
    },
    warnings: [],
  };
}
