import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { detectStacks } from '../../images/detectStack.js';
import { readRepoFacts } from '../../images/readRepoFacts.js';
import { type FixRequest, type FixRequestInput, FixRequestSchema } from '../../protocol/fixRequest.js';
import { InputError } from '../../protocol/inputError.js';
import type { RunRow } from '../../store/runStore.js';
import { locateRepository } from '../../workspace/attemptWorktree.js';
import { resolveCommit } from '../../workspace/repoLocation.js';
import { workingTreeStatus } from '../../workspace/workingTreeStatus.js';
import { detectSharedDeps, type SharedDependencies } from '../dependencies/detectSharedDeps.js';
import { type RepositoryTrust, resolveRepositoryTrust } from '../trust/repositoryTrust.js';
import type { FixDeps, PreparedRun } from './fixRun.js';
import { checkRunNetwork } from './runNetwork.js';

/**
 * Phase 1, prepare the run: check the request against the repository and record the run (a
 * new one, or the cancelled or interrupted one it resumes). Bad input is refused before anything is
 * recorded; once this resolves the run id is in the store, so a caller can hand it out.
 */
export async function prepareRun(request: FixRequest, deps: Pick<FixDeps, 'store' | 'provider' | 'model'>): Promise<PreparedRun> {
  return request.resume_run_id ? resumeRun(request.resume_run_id, request, deps) : startRun(request, deps);
}

export function newRunId(): string {
  return `run-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

async function startRun(request: FixRequest, deps: Pick<FixDeps, 'store' | 'provider' | 'model'>): Promise<PreparedRun> {
  const started = Date.now();
  const loc = await locateRepository(request.repo);
  const repo = loc.top;
  // Only tracked changes stop a run: untracked files (a new .vscode/settings.json) are simply
  // not part of the attempts, which start from HEAD; the run says so.
  const { tracked, untracked } = await workingTreeStatus(loc);
  if (tracked.length > 0 && !request.allow_dirty) {
    throw new InputError(
      `${repo} has uncommitted changes to tracked files (${tracked.length} path(s), e.g. "${tracked[0]}"); commit or stash them, or pass --allow-dirty`,
    );
  }
  const base = await resolveCommit(loc, 'HEAD');
  if (!base) throw new InputError(`${repo} has no commit yet; commit the code to fix first`);
  if (request.branch && (await resolveCommit(loc, `refs/heads/${request.branch}`)))
    throw new InputError(`--branch ${request.branch} already exists in ${repo}; pick a new name`);
  const testCmd = request.test_cmd ?? detectStacks(readRepoFacts(repo))[0]?.test;
  if (!testCmd) throw new InputError(`no test command detected in ${repo}; pass --test-cmd "..."`);
  // Read (and refused when bad) before anything is recorded.
  const trust = await resolveRepositoryTrust(loc, request, deps.store);
  const shared = findSharedDeps(repo, request, trust);
  await checkRunNetwork(repo, request, deps.provider);
  const runId = newRunId();
  const image = request.image ?? '';
  const temperatures = Array.from({ length: request.attempts }, (_, i) => (i === 0 ? 0 : request.temperature));
  deps.store.createRun(
    {
      id: runId,
      repo,
      base_commit: base,
      issue: request.issue,
      test_cmd: testCmd,
      provider: deps.provider.name,
      image,
      model: deps.model.spec,
      attempts: request.attempts,
      runner_pid: process.pid,
      install_cmd: request.install_cmd ?? null,
      settings_json: JSON.stringify(runSettingsOf(request)),
    },
    temperatures,
  );
  return {
    runId,
    repo,
    base,
    testCmd,
    temperatures,
    resumed: false,
    installCmd: request.install_cmd ?? null,
    shared,
    started,
    image,
    untracked,
    trust,
  };
}

function findSharedDeps(repo: string, request: Pick<FixRequest, 'shared_deps'>, trust: RepositoryTrust): SharedDependencies {
  if (request.shared_deps === false) return { deps: [], env: {} };
  return detectSharedDeps(repo, repo, { env: process.env, share: trust.share, exclude: trust.exclude });
}

const runnerAlive = (pid: number) => existsSync(`/proc/${pid}`);

/**
 * Why a stored run cannot be resumed, or null when it can: it never finished (cancelled,
 * interrupted, or still marked running by a runner that is gone) and nobody works on it. A run
 * marked running by this very process is in progress here, so two resumes of one run in one
 * runner cannot both start.
 */
export function notResumable(row: RunRow, alive: (pid: number) => boolean = runnerAlive): string | null {
  if (row.status === 'cancelled' || row.status === 'interrupted') return null;
  if (row.status !== 'running') return `run ${row.id} already ended (${row.status}); start a new run`;
  if (row.runner_pid === process.pid) return `run ${row.id} is in progress in this runner; cancel it first`;
  if (alive(row.runner_pid)) return `run ${row.id} is still in progress in runner pid ${row.runner_pid}`;
  return null;
}

/**
 * What a resume keeps of the run besides what defines it: its budgets, the hosts its cells
 * may and may not reach and whether they share installed dependencies. A run resumed without its
 * allowlist would fail where it needs the network (an npm posttest hook), not where it stopped.
 * Outputs (--out, --apply, --branch) belong to each invocation and are not kept.
 */
export const RUN_SETTINGS = [
  'temperature',
  'max_turns',
  'max_tokens',
  'max_run_tokens',
  'price',
  'timeout_per_attempt_s',
  'cell_timeout_s',
  'allow_net',
  'deny_net',
  'shared_deps',
  'concurrency',
  'allow_green_baseline',
  'include',
  'share',
  'reuse_verdicts',
  'failing_first',
  'warm_caches',
  'early_ground_truth',
  'strict',
] as const satisfies readonly (keyof FixRequest)[];

/** Pure: the settings of a request to record with its run. */
export function runSettingsOf(request: FixRequest): Partial<FixRequestInput> {
  const out: Record<string, unknown> = {};
  for (const k of RUN_SETTINGS) if (request[k] !== undefined) out[k] = request[k];
  return out as Partial<FixRequestInput>;
}

/** Pure: the recorded settings, each checked as the request schema checks it (a damaged one is dropped, its default used). */
export function storedRunSettings(json: string | null | undefined): Partial<FixRequestInput> {
  let raw: unknown;
  try {
    raw = json ? JSON.parse(json) : null;
  } catch {
    return {};
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return {};
  const out: Record<string, unknown> = {};
  for (const k of RUN_SETTINGS) {
    const v = (raw as Record<string, unknown>)[k];
    if (v !== undefined && FixRequestSchema.shape[k].safeParse(v).success) out[k] = v;
  }
  return out as Partial<FixRequestInput>;
}

/**
 * The request that resumes a stored run (`fix --resume`, `fix/resume`): what defines the run
 * and the settings it was started with come from the store; what the caller passes explicitly
 * (a larger --max-turns, the outputs) wins. Runs recorded before settings were kept get the
 * defaults. Refused with one line, before any provider or model is made, when the run cannot
 * be resumed.
 */
export function resumeRequest(row: RunRow, settings: Partial<FixRequestInput> = {}): FixRequestInput {
  const why = notResumable(row);
  if (why) throw new InputError(why);
  const given = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)) as Partial<FixRequestInput>;
  return {
    repo: row.repo,
    issue: row.issue,
    model: row.model,
    attempts: row.attempts,
    provider: row.provider as FixRequestInput['provider'],
    ...(row.image ? { image: row.image } : {}),
    test_cmd: row.test_cmd,
    ...(row.install_cmd ? { install_cmd: row.install_cmd } : {}),
    ...storedRunSettings(row.settings_json),
    ...given,
    // The run's base commit is fixed; the user's later edits are not part of it.
    allow_dirty: true,
    resume_run_id: row.id,
  };
}

/** A run may be resumed when it never finished and no runner works on it (notResumable). */
async function resumeRun(runId: string, request: FixRequest, deps: Pick<FixDeps, 'store' | 'provider'>): Promise<PreparedRun> {
  const started = Date.now();
  const { store } = deps;
  const row = store.getRun(runId);
  if (!row) throw new InputError(`no run ${runId}; see forge-runner runs list`);
  // Read (and refused when bad) before the run is claimed.
  const trust = await resolveRepositoryTrust(await locateRepository(row.repo), request, store);
  await checkRunNetwork(row.repo, { allow_net: request.allow_net, install_cmd: row.install_cmd }, deps.provider);
  // Checked again here, and claimed in the same synchronous step: nothing can claim it in between.
  const why = notResumable(row);
  if (why) throw new InputError(why);
  // The settings it goes on with are the ones a later resume keeps.
  store.claimRun(runId, process.pid, JSON.stringify(runSettingsOf(request)));
  const temperatures = store.attempts(runId).map((a) => a.temperature);
  return {
    runId,
    repo: row.repo,
    base: row.base_commit,
    testCmd: row.test_cmd,
    temperatures,
    resumed: true,
    installCmd: row.install_cmd,
    shared: findSharedDeps(row.repo, request, trust),
    started,
    image: row.image,
    untracked: [],
    trust,
  };
}
