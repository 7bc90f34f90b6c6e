import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { CellProvider } from '../cells/provider.js';
import { detectStacks, registryHosts } from '../images/detectStack.js';
import { readRepoFacts } from '../images/readRepoFacts.js';
import type { CellResult } from '../protocol/cellResult.js';
import type { AttemptReport, FixReport } from '../protocol/fixReport.js';
import { InputError } from '../protocol/inputError.js';
import { openStore } from '../store/openStore.js';
import { type AttemptRow, RunStore } from '../store/runStore.js';
import { applyPatch } from '../workspace/applyPatch.js';
import {
  type AttemptWorktree, attemptsDir, commitAttempt, createAttemptWorktree, destroyAttemptWorktree, locateAttemptWorktree, locateRepository,
} from '../workspace/attemptWorktree.js';
import { captureApplicablePatch } from '../workspace/captureWorktreeDiff.js';
import { applyToWorkspace } from '../workspace/reviewWinner.js';
import { repoTarget, resolveCommit, userExcludesFile } from '../workspace/repoLocation.js';
import { runGit } from '../workspace/safeGit.js';
import { EMPTY_PATCH, type PatchBytes, patchFromStore } from '../workspace/patchBytes.js';
import { type AgentOutcome, runAgentLoop } from './agentLoop.js';
import type { RepairModel } from './models/repairModel.js';
import { patchSize, selectWinner } from './selectWinner.js';
import { renderSummary } from './renderSummary.js';
import { judgeTestRun, type Verdict } from './verdicts/judgeTestRun.js';
import { parseTestOutput } from './verdicts/parsers.js';
import { TEST_REPORTING_ENV, testOutputOf } from './verdicts/testRunOutput.js';
import { readJunitReports, snapshotJunitReports } from './verdicts/junitReports.js';
import { classifyBaseline, describeBrokenEnvironment } from './verdicts/classifyBaseline.js';
import { closedToCellUser, describeSharedDep, detectSharedDeps, FORGE_CONFIG_FILE, readForgeConfig, type SharedDependencies } from './dependencies/detectSharedDeps.js';
import { countTests, emptyReport, type TestOutcome, type TestReport } from './verdicts/testReport.js';

export interface FixOptions {
  repo: string;
  issue: string;
  testCmd?: string;
  /** Runs in a cell on every worktree before its tests (baked images make this unnecessary). */
  installCmd?: string;
  /** Share the checkout's installed dependencies with every cell (default true; --no-shared-deps). */
  sharedDeps?: boolean;
  /** Hosts every cell may reach through the egress proxy (--allow-net); default none. */
  allowNet?: string[];
  attempts: number;
  /** Sampling temperature of attempts 1..K-1 (attempt 0 runs at 0). */
  temperature: number;
  provider: CellProvider;
  image: string;
  model: RepairModel;
  maxTurns: number;
  maxTokens: number;
  timeoutPerAttemptS: number;
  cellTimeoutS: number;
  concurrency?: number;
  outDir?: string;
  apply: boolean;
  branch?: string;
  allowDirty: boolean;
  allowGreenBaseline: boolean;
  stateDir: string;
  progress: (line: string) => void;
  signal?: AbortSignal;
  /** Continue this run (its runner died): finished attempts are kept, the rest redone. */
  resumeRunId?: string;
  /** Called once the run is recorded in the store (before the baseline). */
  onRunCreated?: (runId: string) => void;
}

/**
 * The tests could not run on the base commit (a command or module missing, no test ran, the
 * network refused, a timeout): bad input, not a failed fix. Carries the report that says so.
 */
export class BrokenEnvironmentError extends InputError {
  constructor(message: string, readonly report: FixReport) {
    super(message);
  }
}

export interface FixOutcome {
  report: FixReport;
  /** 0 fixed, 1 not fixed. */
  exitCode: 0 | 1;
}

/** A test cell's result, its console, and the report its build tool wrote (null: none). */
interface TestRun {
  result: CellResult;
  output: string;
  written: TestReport | null;
}

interface AttemptResult {
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
  error: string | null;
}

/**
 * Fix Issue in Cells: baseline (must fail), K sampled attempts in parallel worktrees whose
 * commands all run in cells, selection by real test results, ground truth on a fresh
 * checkout. The user's working tree, index and branch change only with --apply / --branch.
 */
export async function runFix(opts: FixOptions): Promise<FixOutcome> {
  const started = Date.now();
  const store = new RunStore(openStore(join(opts.stateDir, 'forge.db')));
  const { runId, repo, base, testCmd, temperatures, resumed, installCmd, shared } = opts.resumeRunId
    ? await resumeRun(store, opts.resumeRunId, opts)
    : await startRun(store, opts);
  opts.onRunCreated?.(runId);
  opts.progress(`run ${runId}: ${resumed ? 'resumed, ' : ''}${temperatures.length} attempt(s) on ${opts.provider.name}${opts.image ? ` (${opts.image})` : ''}, tests: ${testCmd}`);
  // Every cell sees the attempt at the repository's own path, with the checkout's installed
  // dependencies: absolute paths baked into installed tooling then resolve to the attempt.
  // qemu cells make the writable layer inside the guest; host and docker cells need a root runner to mount it.
  const layers = opts.provider.name === 'qemu' || (process.getuid?.() ?? 0) === 0 ? 'overlay' : 'read-only';
  let deps: SharedDependencies = shared;
  let dependencies: FixReport['dependencies'] = [];
  let sharedSpec: { mount_at: string; shared_deps: { source: string; target: string; layer: 'overlay' | 'read-only' }[] } = { mount_at: repo, shared_deps: [] };
  const useDeps = (found: SharedDependencies, from: string) => {
    deps = found;
    dependencies = found.deps.map((d) => ({ kind: d.kind, source: d.source, target: d.target, detail: d.detail, shared: describeSharedDep(d, repo, layers).replace('from the checkout', from) }));
    sharedSpec = { mount_at: repo, shared_deps: found.deps.map((d) => ({ source: d.source, target: d.target, layer: d.layer })) };
  };
  useDeps(shared, 'from the checkout');

  /**
   * A worktree whose cleanup fails (a cell can make a tree hard to remove) must not end the
   * run and lose every other attempt's result: the failure is said, gc finishes the job.
   */
  const cleanUp = async (wt: AttemptWorktree, how: { keepBranch?: boolean } = {}): Promise<void> => {
    await destroyAttemptWorktree(wt, how).catch((e: Error) => opts.progress(`cleanup: ${wt.attemptId} could not be removed (${e.message.split('\n')[0]}); forge-runner gc --repo ${repo} removes it later`));
  };

  const cell = async (worktree: string, command: string, purpose: string, attemptIdx: number | null, how: { allowNet?: string[]; noDeps?: boolean } = {}): Promise<CellResult> => {
    // Test runs name their tests (regressions need the baseline's passing ones).
    const env = { ...(how.noDeps ? {} : deps.env), ...(purpose === 'run_command' || purpose === 'install' ? {} : TEST_REPORTING_ENV) };
    const allowNet = [...new Set([...(opts.allowNet ?? []), ...(how.allowNet ?? [])])];
    const r = await opts.provider.run(
      {
        image: opts.image, worktree, ...(how.noDeps ? { mount_at: repo } : sharedSpec), cmd: command, env, allow_net: allowNet.length > 0 ? allowNet : false,
        capture_diff: purpose !== 'install', timeout_s: opts.cellTimeoutS,
        labels: { 'forge.run': runId, 'forge.purpose': purpose, ...(attemptIdx === null ? {} : { 'forge.attempt': String(attemptIdx) }) },
      },
      opts.signal ? { signal: opts.signal } : {},
    );
    store.recordCell(runId, attemptIdx, purpose, r, command);
    return r;
  };

  /**
   * The test command in a cell, and what it said: the console, and the report its build tool
   * wrote (Maven, Gradle: JUnit XML in the worktree), read before the worktree goes.
   */
  const testCell = async (worktree: string, purpose: string, attemptIdx: number | null): Promise<TestRun> => {
    const before = snapshotJunitReports(worktree);
    const result = await cell(worktree, testCmd, purpose, attemptIdx);
    return { result, output: testOutputOf(result), written: readJunitReports(worktree, before) };
  };

  /**
   * The install step runs once for the run, in a cell on its own checkout of the base whose
   * only network is the stack's package registries; what it installed (node_modules, a
   * .venv...) is then shared with every cell the same way as a checkout's own.
   */
  let depsWt: AttemptWorktree | null = null;
  const installOnce = async (): Promise<void> => {
    if (!installCmd) return;
    const hosts = registryHosts(detectStacks(readRepoFacts(repo)).map((st) => st.stack));
    opts.progress(`install: ${installCmd} (once for the run; network: ${hosts.length > 0 ? hosts.join(', ') : 'none'}${opts.allowNet?.length ? ` and ${opts.allowNet.join(', ')}` : ''})`);
    depsWt = await createAttemptWorktree(repo, base, `${runId}-deps`);
    const r = await cell(depsWt.path, installCmd, 'install', null, { allowNet: hosts, noDeps: true });
    throwIfCancelled(opts.signal);
    if (r.exit_code !== 0) {
      const tail = testOutputOf(r).trim().split('\n').slice(-3).map((l) => l.trim()).join(' | ');
      throw new InputError(`install command failed (exit ${r.exit_code}${r.timed_out ? ', timed out' : ''}): ${tail}; fix --install-cmd (or install in your checkout: its dependencies are shared)`);
    }
    const installed = detectSharedDeps(depsWt.path, repo, { env: process.env, config: readForgeConfig(repo) });
    // What the install made replaces the checkout's own at the same place; caches outside stay.
    const targets = new Set(installed.deps.map((d) => d.target));
    useDeps({ deps: [...installed.deps, ...shared.deps.filter((d) => !targets.has(d.target))], env: { ...shared.env, ...installed.env } }, 'from the install');
    if (installed.deps.length === 0) opts.progress(`install: it made no dependency directory to share (node_modules, .venv...); name yours in ${FORGE_CONFIG_FILE} (dependencies.share)`);
  };

  try {
    // 0. Dependencies: the checkout's, or what --install-cmd installs once for the run.
    await installOnce();
    if (opts.sharedDeps === false) opts.progress('dependencies: not shared (--no-shared-deps)');
    else if (dependencies.length === 0) opts.progress(`dependencies: none installed in the checkout (install them there, or pass --install-cmd; ${FORGE_CONFIG_FILE} can name more)`);
    for (const d of dependencies) {
      opts.progress(`dependencies: ${d.shared}`);
      const closed = (process.getuid?.() ?? 0) === 0 ? closedToCellUser(d.source) : null;
      if (closed) opts.progress(`dependencies: warning: the cells' user cannot read ${closed}, so its tools will not find what is there; make it readable (chmod -R o+rX ${d.source}) or run forge-runner as its owner`);
    }

    // 1. Baseline: the failing run on the base commit is the oracle (kept across a resume).
    const stored = resumed ? parseStoredBaseline(store.getRun(runId)?.baseline_json ?? null) : null;
    let baseline: Verdict;
    let baselineReport: TestReport | null;
    if (stored) {
      ({ baseline, report: baselineReport } = stored);
      opts.progress('baseline: kept from the interrupted run');
    } else {
      opts.progress('baseline: running the tests on the base commit');
      const baselineWt = await createAttemptWorktree(repo, base, `${runId}-baseline`);
      let baselineTest: TestRun;
      try {
        baselineTest = await testCell(baselineWt.path, 'baseline', null);
      } finally {
        await cleanUp(baselineWt);
      }
      throwIfCancelled(opts.signal);
      const { result: baselineRun, output: baselineOutput } = baselineTest;
      baseline = judgeTestRun(baselineRun.exit_code, baselineOutput, null, baselineTest.written);
      baselineReport = baselineTest.written ?? parseTestOutput(baselineOutput);
      // A baseline whose tests never ran says nothing about the code: stop before any attempt.
      const broken = classifyBaseline({
        exitCode: baselineRun.exit_code, timedOut: baselineRun.timed_out, output: baselineOutput, report: baselineReport, testCmd, cellTimeoutS: opts.cellTimeoutS,
      });
      if (broken) {
        const message = describeBrokenEnvironment(broken);
        const report: FixReport = {
          run_id: runId, status: 'broken_environment', repo, base_commit: base, test_cmd: testCmd, provider: opts.provider.name, image: opts.image, model: opts.model.spec,
          baseline, environment: broken, dependencies, attempts: [], winner: null, best: null, ground_truth: null, applied_to: null, cells: store.cellCount(runId), duration_ms: Date.now() - started,
        };
        store.finishRun(runId, 'failed', null, { ...report, error: message });
        writeOutputs(opts.outDir, report, EMPTY_PATCH);
        throw new BrokenEnvironmentError(message, report);
      }
      store.setBaseline(runId, { verdict: baseline, tests: baselineReport ? [...baselineReport.tests] : [], framework: baselineReport?.framework ?? null });
    }
    opts.progress(`baseline: exit ${baseline.exit_code}, ${baseline.passed} passed, ${baseline.failed} failed${baseline.framework ? ` (${baseline.framework})` : ''}${hookNote(baseline)}`);
    if (baseline.exit_code === 0 && !opts.allowGreenBaseline) {
      store.finishRun(runId, 'failed', null, { error: 'green baseline' });
      throw new InputError(`the tests already pass on the base commit (${testCmd}), so there is no failing test to fix; write one that shows the bug, or pass --allow-green-baseline`);
    }

    // 2. K attempts in parallel, bounded.
    const k = temperatures.length;
    const concurrency = Math.max(1, Math.min(opts.concurrency ?? Math.min(k, availableParallelism()), k));
    const done = new Map(store.attempts(runId).filter((a) => a.status === 'finished' || a.status === 'failed').map((a) => [a.idx, a]));
    const results = await boundedParallel(temperatures.map((t, i) => ({ i, t })), concurrency, async ({ i, t }) => {
      const previous = done.get(i);
      if (previous) {
        opts.progress(`attempt ${i}: finished before the interruption, kept`);
        return keptAttempt(repo, base, previous);
      }
      // A killed runner may have left this attempt's worktree and branch behind.
      await destroyAttemptWorktree({ repo, path: join(attemptsDir(await locateRepository(repo)), `${runId}-a${i}`), branch: `forge/attempt/${runId}-a${i}` }).catch(() => undefined);
      return runAttempt(opts, store, runId, repo, base, testCmd, i, t, baselineReport, cell, testCell);
    });

    throwIfCancelled(opts.signal);

    // 3. Selection by real test results.
    const selection = selectWinner(
      results.filter((r) => r.verdict).map((r) => ({ attemptId: r.attemptId, index: r.index, verdict: r.verdict!, patch: r.patch })),
    );

    // 4. Ground truth: the winner's diff on a fresh checkout of the base, in a fresh cell.
    let groundTruth: FixReport['ground_truth'] = null;
    if (selection.winner) {
      opts.progress(`ground truth: applying ${selection.winner.attempts[0]}'s diff to a fresh checkout`);
      const gtWt = await createAttemptWorktree(repo, base, `${runId}-truth`);
      try {
        const applied = await applyPatch(gtWt, selection.winner.patch);
        let verdict: Verdict | null = null;
        if (applied.applied) {
          await purgePythonCaches(gtWt.path);
          const t = await testCell(gtWt.path, 'ground_truth', null);
          verdict = judgeTestRun(t.result.exit_code, t.output, baselineReport, t.written);
        }
        groundTruth = { applied: applied.applied, conflicts: applied.conflicts, verdict };
      } finally {
        await cleanUp(gtWt);
      }
    }
    const fixed = Boolean(selection.winner && groundTruth?.applied && groundTruth.verdict?.green);

    // 5. Keep the winner on its branch; every other worktree goes.
    let winnerBranch: string | null = null;
    let appliedTo: string | null = null;
    const winnerResult = selection.winner ? results.find((r) => r.attemptId === selection.winner!.attempts[0]) : undefined;
    if (fixed && winnerResult && !winnerResult.wt) {
      const rebuilt = await createAttemptWorktree(repo, base, winnerResult.attemptId);
      await applyPatch(rebuilt, winnerResult.patch);
      winnerResult.wt = rebuilt;
    }
    for (const r of results) {
      if (!r.wt) continue;
      if (fixed && r === winnerResult) {
        await commitAttempt(r.wt, `forge: fix from attempt ${r.index} of ${runId}`);
        await cleanUp(r.wt, { keepBranch: true });
        winnerBranch = r.wt.branch;
      } else {
        await cleanUp(r.wt);
      }
    }
    if (fixed && winnerBranch && opts.branch) {
      await runGit(repoTarget(await locateRepository(repo)), ['branch', '--end-of-options', opts.branch, winnerBranch]);
      appliedTo = `branch ${opts.branch}`;
    }
    if (fixed && selection.winner && opts.apply) {
      // All or nothing: the user's tree is never left half-changed.
      const outcome = (await applyToWorkspace(repo, selection.winner.patch)).applied;
      appliedTo = outcome ? `working tree of ${repo}` : appliedTo;
      if (!outcome) opts.progress('apply: the winner does not apply cleanly to your working tree; it stays on its branch');
    }

    const report: FixReport = {
      run_id: runId,
      status: fixed ? 'fixed' : 'not_fixed',
      repo,
      base_commit: base,
      test_cmd: testCmd,
      provider: opts.provider.name,
      image: opts.image,
      model: opts.model.spec,
      baseline,
      environment: null,
      dependencies,
      attempts: results.map(attemptReport),
      winner: fixed && selection.winner
        ? { attempts: selection.winner.attempts, agreement: selection.winner.agreement, diff_size: selection.winner.size, branch: winnerBranch, verdict: groundTruth!.verdict! }
        : null,
      best: fixed ? null : (selection.best ?? selection.winner)
        ? { attempts: (selection.best ?? selection.winner)!.attempts, diff_size: (selection.best ?? selection.winner)!.size, verdict: (selection.best ?? selection.winner)!.verdict }
        : null,
      ground_truth: groundTruth,
      applied_to: appliedTo,
      cells: store.cellCount(runId),
      duration_ms: Date.now() - started,
    };
    store.finishRun(runId, fixed ? 'fixed' : 'not_fixed', fixed && winnerResult ? winnerResult.index : null, report);
    if (fixed) store.setReview(runId, appliedTo?.startsWith('working tree') ? 'applied' : 'pending');
    writeOutputs(opts.outDir, report, fixed && selection.winner ? selection.winner.patch : (selection.best?.patch ?? EMPTY_PATCH));
    opts.progress(fixed ? `fixed: winner ${report.winner!.attempts.join(', ')} (${report.winner!.diff_size} changed lines) on ${winnerBranch}` : 'not fixed: no attempt passed the tests');
    return { report, exitCode: fixed ? 0 : 1 };
  } catch (e) {
    const row = store.getRun(runId);
    if (row?.status === 'running') store.finishRun(runId, opts.signal?.aborted ? 'interrupted' : 'failed', null, { error: (e as Error).message });
    throw e;
  } finally {
    await opts.provider.drain();
    if (depsWt) await cleanUp(depsWt);
  }
}

async function runAttempt(
  opts: FixOptions, store: RunStore, runId: string, repo: string, base: string, testCmd: string, index: number, temperature: number,
  baselineReport: ReturnType<typeof parseTestOutput>,
  cell: (worktree: string, command: string, purpose: string, attemptIdx: number | null) => Promise<CellResult>,
  testCell: (worktree: string, purpose: string, attemptIdx: number | null) => Promise<TestRun>,
): Promise<AttemptResult> {
  const attemptId = `${runId}-a${index}`;
  const result: AttemptResult = { index, attemptId, temperature, wt: null, outcome: null, verdict: null, patch: EMPTY_PATCH, warnings: [], omitted: [], error: null };
  store.startAttempt(runId, index);
  opts.progress(`attempt ${index}: started (temperature ${temperature})`);
  try {
    result.wt = await createAttemptWorktree(repo, base, attemptId);
    const wt = result.wt;
    result.outcome = await runAgentLoop({
      attemptIndex: index,
      worktree: wt.path,
      issue: opts.issue,
      testCmd,
      temperature,
      model: opts.model,
      budget: { maxTurns: opts.maxTurns, deadline: Date.now() + opts.timeoutPerAttemptS * 1000, maxTokens: opts.maxTokens },
      runCell: (command, purpose) => cell(wt.path, command, purpose, index),
      recordTurn: (turn, reply, results) => store.recordTurn(runId, index, turn, reply, results.map((r) => ({ tool: r.call.name, arguments: r.call.arguments, result: r.result.slice(0, 4000) })), reply.tokens),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    throwIfCancelled(opts.signal);
    // The verdict comes from a fresh cell, whatever the model claimed.
    await purgePythonCaches(wt.path);
    const final = await testCell(wt.path, 'verdict', index);
    throwIfCancelled(opts.signal);
    if (final.result.diff?.incomplete) throw new Error(`its change could not be captured completely (${final.result.diff.incomplete}), so it cannot be reviewed or applied`);
    result.verdict = judgeTestRun(final.result.exit_code, final.output, baselineReport, final.written);
    const change = await captureApplicablePatch({ location: wt.location, base });
    if (change.incomplete) throw new Error(`its change could not be captured completely (${change.incomplete}), so it cannot be reviewed or applied`);
    result.patch = change.patch;
    result.warnings = change.warnings;
    result.omitted = change.omitted;
    if (change.omitted.length > 0) opts.progress(`attempt ${index}: left out of its patch: ${change.omitted.slice(0, 5).map((o) => `${o.path} (${o.reason})`).join(', ')}${change.omitted.length > 5 ? ', ...' : ''}`);
    for (const w of change.warnings) opts.progress(`attempt ${index}: warning: ${w}`);
    store.finishAttempt(runId, index, { verdict: result.verdict, patch: result.patch, turns: result.outcome.turns, tokens: result.outcome.tokens });
    opts.progress(`attempt ${index}: ${result.verdict.green ? 'green' : 'red'} after ${result.outcome.turns} turn(s) (${result.outcome.stop}), ${result.verdict.passed} passed, ${result.verdict.failed} failed, ${patchSize(result.patch)} changed lines${hookNote(result.verdict)}${regressionNote(result.verdict)}`);
  } catch (e) {
    if (opts.signal?.aborted) {
      // Not recorded as finished: a resumed run redoes this attempt from scratch.
      if (result.wt) await destroyAttemptWorktree(result.wt).catch(() => undefined);
      result.wt = null;
      result.error = 'cancelled';
      return result;
    }
    result.error = (e as Error).message.split('\n')[0] ?? 'error';
    store.finishAttempt(runId, index, { error: result.error, turns: result.outcome?.turns ?? 0, tokens: result.outcome?.tokens ?? 0 });
    opts.progress(`attempt ${index}: failed: ${result.error}`);
  }
  return result;
}

async function startRun(store: RunStore, opts: FixOptions) {
  const loc = await locateRepository(opts.repo);
  const repo = loc.top;
  if (!Number.isInteger(opts.attempts) || opts.attempts < 1 || opts.attempts > 64) throw new InputError(`--attempts ${opts.attempts}: expected a whole number from 1 to 64`);
  const excludes = userExcludesFile();
  const status = await runGit(repoTarget(loc, excludes ? [`core.excludesFile=${excludes}`] : []), ['status', '--porcelain', '--untracked-files=all']);
  const dirty = status.text.split('\n').filter(Boolean);
  if (dirty.length > 0 && !opts.allowDirty) {
    throw new InputError(`${repo} has uncommitted changes (${dirty.length} path(s), e.g. "${dirty[0]!.slice(3)}"); commit or stash them, or pass --allow-dirty`);
  }
  const base = await resolveCommit(loc, 'HEAD');
  if (!base) throw new InputError(`${repo} has no commit yet; commit the code to fix first`);
  if (opts.branch && (await resolveCommit(loc, `refs/heads/${opts.branch}`))) throw new InputError(`--branch ${opts.branch} already exists in ${repo}; pick a new name`);
  const testCmd = opts.testCmd ?? detectStacks(readRepoFacts(repo))[0]?.test;
  if (!testCmd) throw new InputError(`no test command detected in ${repo}; pass --test-cmd "..."`);
  // Read (and refused when bad) before anything is recorded.
  const shared = findSharedDeps(repo, opts);
  const runId = `run-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const temperatures = Array.from({ length: opts.attempts }, (_, i) => (i === 0 ? 0 : opts.temperature));
  store.createRun(
    { id: runId, repo, base_commit: base, issue: opts.issue, test_cmd: testCmd, provider: opts.provider.name, image: opts.image, model: opts.model.spec, attempts: opts.attempts, runner_pid: process.pid, install_cmd: opts.installCmd ?? null },
    temperatures,
  );
  return { runId, repo, base, testCmd, temperatures, resumed: false, installCmd: opts.installCmd ?? null, shared };
}

function findSharedDeps(repo: string, opts: Pick<FixOptions, 'sharedDeps'>): SharedDependencies {
  const config = readForgeConfig(repo);
  if (opts.sharedDeps === false) return { deps: [], env: {} };
  return detectSharedDeps(repo, repo, { env: process.env, config });
}

/** A run may be resumed when it never finished and the runner that owned it is gone. */
async function resumeRun(store: RunStore, runId: string, opts: Pick<FixOptions, 'sharedDeps'>) {
  const row = store.getRun(runId);
  if (!row) throw new InputError(`no run ${runId}; see forge-runner runs list`);
  if (row.status !== 'running' && row.status !== 'interrupted') throw new InputError(`run ${runId} already ended (${row.status}); start a new run`);
  if (row.runner_pid !== process.pid && existsSync(`/proc/${row.runner_pid}`)) throw new InputError(`run ${runId} is still in progress in runner pid ${row.runner_pid}`);
  store.claimRun(runId, process.pid);
  const temperatures = store.attempts(runId).map((a) => a.temperature);
  return { runId, repo: row.repo, base: row.base_commit, testCmd: row.test_cmd, temperatures, resumed: true, installCmd: row.install_cmd, shared: findSharedDeps(row.repo, opts) };
}

function parseStoredBaseline(json: string | null): { baseline: Verdict; report: TestReport | null } | null {
  if (!json) return null;
  const stored = JSON.parse(json) as { verdict: Verdict; tests: [string, TestOutcome][]; framework: string | null };
  const report = stored.framework ? countTests({ ...emptyReport(stored.framework), tests: new Map(stored.tests) }) : null;
  return { baseline: stored.verdict, report };
}

/** An attempt that finished before the interruption: its verdict and patch come from the store. */
async function keptAttempt(repo: string, base: string, a: AttemptRow): Promise<AttemptResult> {
  const path = join(attemptsDir(await locateRepository(repo)), a.attempt_id);
  const location = existsSync(path) ? await locateAttemptWorktree(repo, path) : null;
  return {
    index: a.idx,
    attemptId: a.attempt_id,
    temperature: a.temperature,
    wt: location ? { repo, attemptId: a.attempt_id, path, branch: `forge/attempt/${a.attempt_id}`, baseCommit: base, included: [], location } : null,
    outcome: { turns: a.turns, tokens: a.tokens, stop: 'finish', summary: null },
    verdict: a.verdict_json ? (JSON.parse(a.verdict_json) as Verdict) : null,
    patch: patchFromStore(a.patch),
    warnings: [],
    omitted: [],
    error: a.error,
  };
}

function attemptReport(r: AttemptResult): AttemptReport {
  return {
    index: r.index,
    attempt_id: r.attemptId,
    temperature: r.temperature,
    status: r.error ? 'failed' : 'finished',
    stop: r.outcome?.stop ?? null,
    turns: r.outcome?.turns ?? 0,
    tokens: r.outcome?.tokens ?? 0,
    verdict: r.verdict,
    diff_size: patchSize(r.patch),
    review_warnings: r.warnings,
    omitted: r.omitted,
    error: r.error,
  };
}

/**
 * Stale .pyc files are a known source of wrong verdicts: none survive into a verdict cell.
 * The tree is a cell's work: links are not followed and the walk is bounded.
 */
async function purgePythonCaches(tree: string): Promise<void> {
  let budget = 200_000;
  const stack = [tree];
  while (stack.length > 0 && budget > 0) {
    const dir = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (--budget <= 0) break;
      if (!e.isDirectory() || e.name === '.git' || e.name === 'node_modules') continue;
      const p = join(dir, e.name);
      if (e.name === '__pycache__') rmSync(p, { recursive: true, force: true });
      else stack.push(p);
    }
  }
}

function writeOutputs(outDir: string | undefined, report: FixReport, patch: PatchBytes): void {
  const summary = renderSummary(report);
  if (outDir) {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, 'winner.diff'), patch);
    writeFileSync(join(outDir, 'report.json'), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(join(outDir, 'summary.md'), summary);
  }
  const step = process.env.GITHUB_STEP_SUMMARY;
  if (step && existsSync(step)) appendFileSync(step, summary + '\n');
  else if (step) writeFileSync(step, summary + '\n');
}

/** Said on every test run whose npm hook failed for want of the network: never silent. */
function hookNote(v: Verdict): string {
  return v.hook_failures.map((h) => `; npm ${h.hook} (${h.command}) failed for want of the network after the tests passed: not counted`).join('');
}

function regressionNote(v: Verdict): string {
  return v.regressions.length > 0 ? `; regressions: ${v.regressions.slice(0, 3).join(', ')}${v.regressions.length > 3 ? ', ...' : ''}` : '';
}

function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new Error('cancelled');
}

async function boundedParallel<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  });
  await Promise.all(lanes);
  return results;
}
