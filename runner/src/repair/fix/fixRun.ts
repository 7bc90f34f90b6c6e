import type { CellScheduler } from '../../cells/cellScheduler.js';
import type { CellProvider } from '../../cells/provider.js';
import type { FixReport } from '../../protocol/fixReport.js';
import type { FixRequest } from '../../protocol/fixRequest.js';
import type { RunStore } from '../../store/runStore.js';
import type { AttemptWorktree } from '../../workspace/attemptWorktree.js';
import type { PatchBytes } from '../../workspace/patchBytes.js';
import type { AgentOutcome } from '../agentLoop.js';
import type { SharedDependencies } from '../dependencies/detectSharedDeps.js';
import type { RepositoryTrust } from '../trust/repositoryTrust.js';
import type { RepairModel } from '../models/repairModel.js';
import type { Verdict } from '../verdicts/judgeTestRun.js';

/** What a fix run works with; the caller owns them (one store for the whole runner). */
export interface FixDeps {
  store: RunStore;
  provider: CellProvider;
  model: RepairModel;
  progress: (line: string) => void;
  signal?: AbortSignal | undefined;
  /** The runner's one cell scheduler (every run it serves shares it); a run of its own without. */
  scheduler?: CellScheduler;
  /**
   * A cell of this run waits for the machine (`ahead`: cells running or queued before it), or
   * stopped waiting (null): the editor shows the attempt as waiting, with where it stands.
   */
  cellWait?: (who: { attemptIdx: number | null; purpose: string }, ahead: number | null) => void;
}

/** A run recorded in the store (new or resumed), as every later phase needs it. */
export interface PreparedRun {
  runId: string;
  repo: string;
  base: string;
  testCmd: string;
  /** One per attempt: attempt 0 runs at 0, the others at the request's temperature. */
  temperatures: number[];
  resumed: boolean;
  installCmd: string | null;
  /** The checkout's own installed dependencies (none with shared_deps false). */
  shared: SharedDependencies;
  /** Date.now() when the run was prepared: the report's duration counts from here. */
  started: number;
  /** Cell image ('' for host and qemu cells). */
  image: string;
  /** Untracked files of the checkout: not part of the attempts (said once, at the start). */
  untracked: string[];
  /** What the run takes from the checkout beyond its commit: included files, shares (the user's word). */
  trust: RepositoryTrust;
}

export interface FixOutcome {
  report: FixReport;
  /** 0 fixed, 1 not fixed. */
  exitCode: 0 | 1;
}

export interface AttemptResult {
  index: number;
  attemptId: string;
  temperature: number;
  wt: AttemptWorktree | null;
  outcome: AgentOutcome | null;
  verdict: Verdict | null;
  patch: PatchBytes;
  /** What the review cannot show of this attempt's change (see reviewWarnings). */
  warnings: string[];
  /** What the attempt changed that its patch leaves out. */
  omitted: { path: string; reason: string }[];
  /** New directories a tool marked as its cache: generated, not part of the patch. */
  generated: string[];
  error: string | null;
}

/** Everything a phase after prepareRun reads: the run, the request, the caller's deps. */
export interface RunScope {
  run: PreparedRun;
  request: FixRequest;
  deps: FixDeps;
}

/** Said on every test run whose npm hook failed for want of the network: never silent. */
export function hookNote(v: Verdict): string {
  return v.hook_failures
    .map((h) => `; npm ${h.hook} (${h.command}) failed for want of the network after the tests passed: not counted`)
    .join('');
}

export function regressionNote(v: Verdict): string {
  const named =
    v.regressions.length > 0 ? `; regressions: ${v.regressions.slice(0, 3).join(', ')}${v.regressions.length > 3 ? ', ...' : ''}` : '';
  return v.regressions_known || !v.regressions_unknown ? named : `${named}; regressions not known in full: ${v.regressions_unknown}`;
}

export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new Error('cancelled');
}
