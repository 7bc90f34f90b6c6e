import type { FixReport } from '../../protocol/fixReport.js';
import { InputError } from '../../protocol/inputError.js';
import type { CellResult } from '../../protocol/cellResult.js';
import { runCacheDirName } from '../../workspace/runCacheDir.js';
import { attemptsDir, type AttemptWorktree, destroyAttemptWorktree, locateRepository } from '../../workspace/attemptWorktree.js';
import { describeSharedDep, type SharedDependencies } from '../dependencies/detectSharedDeps.js';
import { readJunitReports, snapshotJunitReports } from '../verdicts/junitReports.js';
import { OFFLINE_ENV, TEST_REPORTING_ENV, testOutputOf } from '../verdicts/testRunOutput.js';
import { readCellReport, reportRequestEnv, snapshotCellReports } from '../verdicts/cellReports.js';
import type { TestReport } from '../verdicts/testReport.js';
import type { RunScope } from './fixRun.js';
import { type JudgeOptions, judgeTestRun, type Verdict } from '../verdicts/judgeTestRun.js';
import type { Judged } from '../verdicts/failingSet.js';
import { isNpmTestCommand, isRegistryOnlyHook, splitNpmStages } from '../verdicts/npmLifecycle.js';
import { plain } from '../verdicts/testReport.js';
import { parseTestOutput } from '../verdicts/parsers.js';
import { runReport } from '../verdicts/judgeTestRun.js';
import { testRunCrash } from '../verdicts/testRunCrash.js';
import { deniedEgressOf } from '../verdicts/deniedEgress.js';
import { repoTarget } from '../../workspace/repoLocation.js';
import { runGit } from '../../workspace/safeGit.js';
import { readFileBeneath } from '../../hostguard/openBeneath.js';
import { hookProgramNotTheTool, npmrcActiveKey } from '../verdicts/hookProgram.js';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { CellScheduler } from '../../cells/cellScheduler.js';
import { DEFAULT_LIMITS } from '../../protocol/cellSpec.js';
import type { TargetedRun } from '../verdicts/failingFirst.js';
import {
  baselineCacheEnv,
  cacheAppendEnv,
  keepBaselineCaches,
  type KeptCache,
  removeKeptCaches,
  reportsCachedTestResult,
} from './baselineCaches.js';

/**
 * A cell whose worktree was withheld (the hazard walk after it could not finish): nothing may
 * use that tree again, so the cell fails whatever it ran for (an attempt, the baseline, the
 * install, ground truth), and the tree is only removed. Bad input: the repository's code did it.
 */
export class WorktreeWithheldError extends InputError {}

/** Idle-core work that found no idle core, or gave its core to a cell that needed it: nothing was judged. */
export class EarlyWorkDropped extends Error {
  constructor() {
    super('no idle core for it');
  }
}

/** A test cell's result, its console, and the report its build tool wrote (null: none). */
export interface TestRun {
  result: CellResult;
  output: string;
  /** The log the parsers read holds every byte the command printed. */
  logWhole: boolean;
  written: TestReport | null;
  /** Only these tests ran (failing tests first), not the whole suite. */
  selected?: TargetedRun;
  /** Only the baseline's failing tests ran, and every one failed again: the red verdict that run makes (failingFirstVerdict.ts). */
  targetedRed?: Verdict;
}

/** Who a cell runs for, in progress lines: the attempt, or the phase (baseline, ground truth). */
function whoRuns(purpose: string, attemptIdx: number | null): string {
  return attemptIdx === null ? purpose : `attempt ${attemptIdx}`;
}

/** How a test cell ended, for judging whether its failing list is whole. */
export function runEnd(t: TestRun): NonNullable<JudgeOptions['end']> {
  return { timedOut: t.result.timed_out, limitsHit: t.result.limits_hit, logWhole: t.logWhole };
}

/**
 * The cells of one run: every command of every phase goes through here, so each is labelled
 * with its run, purpose and attempt, sees the run's shared dependencies, and is recorded.
 */
/** How often idle-core work looks for cells waiting on the machine (a poll of the store's queue). */
const WAITING_POLL_MS = 250;

/** How a cell of the run runs (RunCells.cell). */
interface CellHow {
  allowNet?: string[];
  noDeps?: boolean;
  env?: Record<string, string>;
  /** Added after the value the cell has (GOFLAGS=-v gets a -run): failing tests first. */
  appendEnv?: Record<string, string>;
  exclusive?: boolean;
  /** Without the run's build caches (a run whose result came from them is run again). */
  noCaches?: boolean;
  /** Work on an idle core only (a ground truth started early): declined when none is free, stopped by this signal. */
  early?: AbortSignal;
  /**
   * Asked once the cell has its slot: another command to run instead (null: this one). A
   * cell that waited decides on what is known when it starts (the baseline's failing tests).
   */
  choose?: () => Promise<{ command: string; purpose: string; appendEnv: Record<string, string> } | null>;
}

export class RunCells {
  private deps!: SharedDependencies;
  /** The shared dependencies as the report names them. */
  dependencies: FixReport['dependencies'] = [];
  private sharedSpec!: { mount_at: string; shared_deps: { source: string; target: string; layer: 'overlay' | 'read-only' }[] };
  private readonly layers: 'overlay' | 'read-only';
  /** What the baseline cell compiled, for every later cell of the run (baselineCaches.ts). */
  private caches: KeptCache[] = [];
  /** Swarm cells run on the cluster's nodes: this machine's budget is not theirs. */
  private readonly scheduler: CellScheduler | null;

  constructor(private readonly scope: RunScope) {
    this.scheduler =
      scope.deps.provider.name === 'swarm' ? null : (scope.deps.scheduler ?? new CellScheduler(scope.deps.store.cellSlots()));
    // Every cell sees the attempt at the repository's own path, with the checkout's installed
    // dependencies: absolute paths baked into installed tooling then resolve to the attempt.
    // qemu cells make the writable layer inside the guest; host and docker cells need a root runner to mount it.
    this.layers = scope.deps.provider.name === 'qemu' || (process.getuid?.() ?? 0) === 0 ? 'overlay' : 'read-only';
    this.useDeps(scope.run.shared, 'from the checkout');
  }

  useDeps(found: SharedDependencies, from: string): void {
    const repo = this.scope.run.repo;
    this.deps = found;
    this.dependencies = found.deps.map((d) => ({
      kind: d.kind,
      source: d.source,
      target: d.target,
      detail: d.detail,
      shared: describeSharedDep(d, repo, this.layers).replace('from the checkout', from),
    }));
    this.sharedSpec = { mount_at: repo, shared_deps: found.deps.map((d) => ({ source: d.source, target: d.target, layer: d.layer })) };
  }

  async cell(worktree: string, command: string, purpose: string, attemptIdx: number | null, how: CellHow = {}): Promise<CellResult> {
    const { run, request, deps } = this.scope;
    if (!this.baselineIsOver && this.waitsForBaseline(purpose)) {
      deps.progress(`${whoRuns(purpose, attemptIdx)}: its ${purpose} waits for the baseline's build cache`);
      await this.baselineOver;
    }
    const release = how.early ? this.idleCell(how.early) : await this.waitForCell(purpose, attemptIdx, how.exclusive ?? false);
    // Nothing may leave the slot taken: what fails before the cell starts gives it back.
    let made: Awaited<ReturnType<RunCells['cellInput']>>;
    try {
      made = await this.cellInput(command, purpose, how);
    } catch (e) {
      release();
      this.onCellEnded?.();
      throw e;
    }
    ({ command, purpose, how } = made);
    const { caches, allowNet, env } = made;
    // Idle-core work gives its core to any cell of the machine that waits, another runner's too.
    const gaveWay = new AbortController();
    const watch = how.early ? setInterval(() => this.othersWaiting() && gaveWay.abort(), WAITING_POLL_MS) : null;
    const stopped = () => Boolean(how.early?.aborted || gaveWay.signal.aborted);
    const signal = how.early ? AbortSignal.any([how.early, gaveWay.signal, ...(deps.signal ? [deps.signal] : [])]) : deps.signal;
    const r = await deps.provider
      .run(
        {
          image: run.image,
          worktree,
          ...(how.noDeps
            ? { mount_at: run.repo }
            : {
                ...this.sharedSpec,
                shared_deps: [
                  ...this.sharedSpec.shared_deps,
                  ...caches.map((c) => ({ source: c.source, target: c.target, layer: 'overlay' as const })),
                ],
              }),
          cmd: command,
          env,
          allow_net: allowNet.length > 0 ? allowNet : false,
          // The user's own deny list wins over every allowlist, the install step's registries too.
          deny_net: request.deny_net,
          capture_diff: purpose !== 'install',
          timeout_s: request.cell_timeout_s,
          labels: {
            'forge.run': run.runId,
            'forge.purpose': purpose,
            ...(attemptIdx === null ? {} : { 'forge.attempt': String(attemptIdx) }),
          },
        },
        signal ? { signal } : {},
      )
      .finally(() => {
        if (purpose.startsWith('baseline')) this.baselineRan = true;
        if (watch) clearInterval(watch);
        release();
        this.onCellEnded?.();
      });
    // Idle-core work stopped midway is recorded as such: its result stands for nothing.
    deps.store.recordCell(run.runId, attemptIdx, stopped() ? `${purpose}_stopped` : purpose, r, command);
    if (r.worktree_withheld) throw new WorktreeWithheldError(r.worktree_withheld);
    if (stopped()) throw new EarlyWorkDropped();
    return r;
  }

  /** A baseline cell ended: what it found (the failing tests) is known in a moment. */
  baselineRan = false;

  /** What a cell that has its slot runs, and with what: `how.choose` asked, the run's variables and caches added. */
  private async cellInput(command: string, purpose: string, how: CellHow) {
    const { run, request } = this.scope;
    const chosen = (await how.choose?.()) ?? null;
    if (chosen) {
      command = chosen.command;
      purpose = chosen.purpose;
      how = { ...how, appendEnv: { ...how.appendEnv, ...chosen.appendEnv } };
    }
    const caches = how.noDeps || how.noCaches ? [] : this.caches;
    // Test runs name their tests (regressions need the baseline's passing ones).
    const allowNet = [...new Set([...request.allow_net, ...(how.allowNet ?? [])])];
    const env: Record<string, string> = {
      // The conventional no-colour variables (no-color.org; FORCE_COLOR=0 for chalk and Node):
      // logs, reports and what the model reads stay plain text. A command may set its own.
      NO_COLOR: '1',
      FORCE_COLOR: '0',
      ...(how.noDeps ? {} : this.deps.env),
      ...Object.fromEntries(caches.map((c) => [c.variable, c.target])),
      ...(purpose === 'run_command' || purpose === 'install' ? {} : { ...TEST_REPORTING_ENV, ...reportRequestEnv(run.repo) }),
      ...(allowNet.length === 0 ? OFFLINE_ENV : {}),
      ...how.env,
    };
    // A cell that writes or reads the run's build caches keeps out of them what must not be kept (test results).
    const cached = caches.length > 0 || (!how.noDeps && this.baselineCaching && purpose.startsWith('baseline'));
    const appended = { ...(cached ? cacheAppendEnv(caches.length > 0 ? caches : undefined) : {}) };
    for (const [k, v] of Object.entries(how.appendEnv ?? {})) appended[k] = appended[k] ? `${appended[k]} ${v}` : v;
    for (const [k, v] of Object.entries(appended)) env[k] = env[k] ? `${env[k]} ${v}` : v;
    return { command, purpose, how, caches, allowNet, env };
  }

  /** Called when a cell of this run has to wait for the machine: work on idle cores gives way. */
  onContention: (() => void) | null = null;
  /** Called when a cell of this run ended: its core may be idle now. */
  onCellEnded: (() => void) | null = null;

  /** Whether any cell of the machine waits for a slot (a store that is busy this once says no: the next poll asks again). */
  private othersWaiting(): boolean {
    try {
      return (this.scheduler?.waiting() ?? 0) > 0;
    } catch {
      return false;
    }
  }

  /** Whether a cell for idle-core work would start now (the machine has a free core and no cell waits). */
  idleCoreNow(): boolean {
    try {
      const release = this.scheduler?.acquireIfFree({ runId: this.scope.run.runId, memoryMib: DEFAULT_LIMITS.memory_mib });
      release?.();
      return Boolean(release);
    } catch {
      // Idle-core work never fails the cell whose end asked for it.
      return false;
    }
  }

  /** A slot for idle-core work, or EarlyWorkDropped when the machine has none free now. */
  private idleCell(early: AbortSignal): () => void {
    const release = this.scheduler?.acquireIfFree({
      runId: this.scope.run.runId,
      memoryMib: DEFAULT_LIMITS.memory_mib,
      signal: early,
    });
    if (!release) throw new EarlyWorkDropped();
    return release;
  }

  /**
   * A slot of the machine's cell budget: a run overlapping another waits its turn, and says
   * where it stands while it waits.
   */
  private async waitForCell(purpose: string, attemptIdx: number | null, exclusive: boolean): Promise<() => void> {
    if (!this.scheduler) return () => undefined;
    const { run, deps } = this.scope;
    const who = whoRuns(purpose, attemptIdx);
    let waited = false;
    const acquired = this.scheduler.acquire({
      runId: run.runId,
      memoryMib: DEFAULT_LIMITS.memory_mib,
      exclusive,
      ...(deps.signal ? { signal: deps.signal } : {}),
      onWait: (s) => {
        waited = true;
        this.onContention?.();
        deps.cellWait?.({ attemptIdx, purpose }, s.ahead);
        deps.progress(
          exclusive
            ? `${who}: waiting until no other cell runs on this machine (${s.ahead} running or ahead)`
            : `${who}: waiting for a free cell: ${s.ahead} ahead (this machine runs ${s.budget.cells} at a time)`,
        );
      },
    });
    const stopWaiting = () => {
      if (waited) deps.cellWait?.({ attemptIdx, purpose }, null);
    };
    return acquired.then(
      (release) => {
        stopWaiting();
        // The waiting line is the last one shown for this attempt until it says more: end it.
        if (waited) deps.progress(`${who}: running (a cell came free)`);
        return release;
      },
      (e: unknown) => {
        stopWaiting();
        throw e;
      },
    );
  }

  /**
   * The test command in a cell, and what it said: the console, and the report its build tool
   * wrote (Maven, Gradle: JUnit XML in the worktree) or its test runner wrote when asked
   * through the environment (pytest: cellReports), read before the worktree goes.
   */
  async testCell(
    worktree: string,
    purpose: string,
    attemptIdx: number | null,
    env?: Record<string, string>,
    exclusive = false,
    /** Only these tests; a function is asked once the cell has its slot (null: the whole suite). */
    targeted?: TargetedRun | (() => Promise<TargetedRun | null>),
    early?: AbortSignal,
  ): Promise<TestRun> {
    const testCmd = this.scope.run.testCmd;
    let selected = typeof targeted === 'function' ? null : (targeted ?? null);
    // The first run's purpose as recorded (a chosen targeted run says so): the uncached re-run is named after it.
    let named = purpose;
    const run = async (noCaches: boolean, as: string): Promise<TestRun> => {
      const before = snapshotJunitReports(worktree);
      const requested = snapshotCellReports(worktree);
      const decide = typeof targeted === 'function' ? targeted : null;
      const choose = decide
        ? async () => {
            selected = await decide();
            if (selected) named = `${as}_targeted`;
            return selected && { command: selected.command ?? testCmd, purpose: named, appendEnv: selected.env };
          }
        : undefined;
      const result = await this.cell(worktree, selected?.command ?? testCmd, as, attemptIdx, {
        ...(env ? { env } : {}),
        ...(selected ? { appendEnv: selected.env } : {}),
        exclusive,
        noCaches,
        ...(early ? { early } : {}),
        ...(choose ? { choose } : {}),
      });
      // Chosen once: a second try runs what the first did.
      targeted = selected ?? undefined;
      const log = testOutputOf(result);
      const written = readJunitReports(worktree, before) ?? readCellReport(worktree, requested);
      return { result, output: log.text, logWhole: log.whole, written, ...(selected ? { selected } : {}) };
    };
    const first = await run(false, purpose);
    // GOFLAGS=-count=1 keeps test results out of the run's build cache, but a command that sets
    // GOFLAGS itself (a Makefile, a script) replaces it: the baseline then kept results, and Go
    // reports a package whose inputs it thinks unchanged as passed without running it, blind to
    // a script a test runs (red team). Such a run says nothing about this tree.
    if (this.caches.length === 0 || !reportsCachedTestResult(first.output)) return first;
    const who = whoRuns(purpose, attemptIdx);
    this.scope.deps.progress(
      `${who}: go test reported results from the run's build cache (the command sets GOFLAGS, so -count=1 was not in force): run again without it`,
    );
    return run(true, `${named}_uncached`);
  }

  /**
   * The test command in a cell; a run whose test runner died before reporting (testRunCrash.ts:
   * out of memory, a limit, a signal) is tried once more when no other cell runs on the
   * machine. `crash` says why when the second try died too: no verdict on the change.
   * `first`: a run of the same tree already made (the attempt's own run_tests), taken as the first try.
   */
  async testCellOnce(
    worktree: string,
    purpose: string,
    attemptIdx: number | null,
    first?: TestRun,
    env?: Record<string, string>,
    early?: AbortSignal,
  ): Promise<{ test: TestRun; crash: string | null }> {
    const crashOf = (t: TestRun) =>
      testRunCrash(
        { exitCode: t.result.exit_code, timedOut: t.result.timed_out, killedBy: t.result.killed_by, limitsHit: t.result.limits_hit },
        t.output,
        runReport(t.written, parseTestOutput(t.output), t.logWhole),
      );
    const firstTry = first ?? (await this.testCell(worktree, purpose, attemptIdx, env, false, undefined, early));
    const crash = crashOf(firstTry);
    if (!crash) return { test: firstTry, crash: null };
    // The second try waits for the machine to itself: no work for an idle core.
    if (early) throw new EarlyWorkDropped();
    const who = whoRuns(purpose, attemptIdx);
    this.scope.deps.progress(`${who}: the tests could not run (${crash}); trying once more when no other cell runs`);
    const second = await this.testCell(worktree, `${purpose}_retry`, attemptIdx, env, true);
    return { test: second, crash: crashOf(second) };
  }

  /**
   * The test command in a cell, judged against the baseline. A run that exited non-zero is
   * green through tests failing before and after (named) or through npm's hook rule (its tests passed, a post hook then failed for want of
   * the network), which rests on what the output says, and output is the command's to write:
   * such a verdict is kept only for an npm test command whose posttest is the base commit's
   * registry-only script (npm audit...), and when the same command with npm's hooks off
   * (npm_config_ignore_scripts) exits 0 in a second cell. `first`: as testCellOnce takes it.
   */
  async judgedTestCell(
    worktree: string,
    purpose: string,
    attemptIdx: number | null,
    baselineKnown: Judged | null | Promise<Judged | null>,
    first?: TestRun,
    early?: AbortSignal,
  ): Promise<{ test: TestRun; verdict: Verdict }> {
    const npmHooks = isNpmTestCommand(this.scope.run.testCmd);
    const { test, crash } = await this.testCellOnce(worktree, purpose, attemptIdx, first, undefined, early);
    // Work started early may have run before the baseline was known: judged once it is.
    const baseline = await baselineKnown;
    const verdict = judgeTestRun(test.result.exit_code, test.output, baseline, test.written, {
      npmHooks,
      end: runEnd(test),
      egressDenied: deniedEgressOf(test.result.egress_denied),
    });
    if (crash) return { test, verdict: { ...verdict, green: false, could_not_run: crash } };
    // Green with a non-zero exit through failures that were there before (issueTests.ts) names them: no hook to check.
    if (!verdict.green || verdict.exit_code === 0 || verdict.hook_failures.length === 0) return { test, verdict };
    const hook = verdict.hook_failures[0]?.hook ?? 'post';
    const why = await this.hookHeldAgainst(worktree, hook, verdict.hook_failures[0]?.command ?? '', test.output);
    if (why !== null) {
      this.scope.deps.progress(`${purpose}: the ${hook} hook failed after the tests passed, and ${why}: counted as failing`);
      return { test, verdict: { ...verdict, hook_failures: [], green: false } };
    }
    const alone = await this.testCell(
      worktree,
      `${purpose}_without_hooks`,
      attemptIdx,
      { npm_config_ignore_scripts: 'true' },
      false,
      undefined,
      early,
    );
    if (alone.result.exit_code === 0) return { test, verdict };
    this.scope.deps.progress(
      `${purpose}: the output said a ${hook} hook failed after the tests passed, but the tests alone (hooks off) exit ${alone.result.exit_code}: counted as failing`,
    );
    return {
      test: alone,
      verdict: judgeTestRun(alone.result.exit_code, alone.output, baseline, alone.written, {
        npmHooks: false,
        end: runEnd(alone),
        egressDenied: deniedEgressOf(alone.result.egress_denied),
      }),
    };
  }

  private baseScripts: Promise<{
    pkg: string | null;
    scripts: Record<string, unknown>;
    npmrc: string | null;
    tracksNodeModules: boolean;
  }> | null = null;

  /**
   * Why a failed npm hook of `worktree` is held against it, or null when it is not. Output
   * cannot say why a hook failed (it is the hook's to print, and one check failing for want of
   * the network hides any other), so only a hook whose whole job is to ask the package registry
   * is discounted (`npm audit`, `npm outdated`...): it cannot pass in a cell without the network,
   * whatever the change. It must be the base commit's own script, with npm's project config
   * (.npmrc) unchanged.
   */
  private async hookHeldAgainst(worktree: string, hook: string, failedCommand: string, output: string): Promise<string | null> {
    if (hook !== 'posttest') return `only a posttest hook is discounted (not ${hook})`;
    this.baseScripts ??= (async () => {
      const loc = await locateRepository(this.scope.run.repo);
      const show = async (path: string) =>
        runGit(repoTarget(loc), ['cat-file', 'blob', `${this.scope.run.base}:${path}`], { okExitCodes: [128] })
          .then((r) => (r.exitCode === 0 ? r.text : null))
          .catch(() => null);
      let manifest: { name?: unknown; version?: unknown; scripts?: Record<string, unknown> } = {};
      try {
        manifest = JSON.parse((await show('package.json')) ?? '{}') as typeof manifest;
      } catch {
        manifest = {};
      }
      const pkg = typeof manifest.name === 'string' && typeof manifest.version === 'string' ? `${manifest.name}@${manifest.version}` : null;
      const tracked = await runGit(repoTarget(loc), ['ls-tree', '--name-only', this.scope.run.base, '--', 'node_modules'], {
        okExitCodes: [128],
      }).catch(() => null);
      // Unknown counts as tracked: the hook is then held against the attempt.
      const tracksNodeModules = tracked === null || tracked.exitCode !== 0 || tracked.text.trim() !== '';
      return { pkg, scripts: manifest.scripts ?? {}, npmrc: await show('.npmrc'), tracksNodeModules };
    })();
    const base = await this.baseScripts;
    // Only the root package's own lifecycle: a workspace's (or a nested package's) hooks also
    // ran, and npm's hooks-off run would skip theirs too, so none of them would be judged.
    const other = splitNpmStages(plain(output)).find((st) => st.pkg !== base.pkg);
    if (!base.pkg || other)
      return `scripts of ${other?.pkg ?? 'a package without a name and version'} ran too (npm workspaces or a nested package)`;
    const script = base.scripts[hook];
    if (typeof script !== 'string') return `the base commit's package.json has no ${hook} script`;
    if (npmScript(worktree, hook) !== script) return `its ${hook} script is not the base commit's`;
    // The hook that failed must be that script (a nested package of the same name@version has hooks of its own).
    if (failedCommand.trim() !== script.trim())
      return `the ${hook} that failed ran "${failedCommand.slice(0, 80)}", not the base commit's script`;
    const npmrc = readFileBeneath(worktree, '.npmrc', 1024 * 1024);
    if ((npmrc.kind === 'ok' ? npmrc.bytes.toString('utf8') : null) !== base.npmrc) return 'the attempt changed .npmrc';
    const active = npmrcActiveKey(base.npmrc);
    if (active !== null) return `the repository's .npmrc sets ${active}, which can run its own code in the ${hook}`;
    if (!isRegistryOnlyHook(script))
      return `its ${hook} (${script.slice(0, 80)}) does more than ask the package registry, so its failure may be the change's`;
    // A registry tool prints no test results: a hook whose output shows one ran more than the tool.
    const printed =
      splitNpmStages(plain(output))
        .filter((st) => st.name === hook)
        .at(-1)?.output ?? '';
    if (parseTestOutput(printed) !== null || /^\s*(?:not ok \d|[✘✖×] )|^\s*\d+ failing$|AssertionError/m.test(printed))
      return `its ${hook}'s output shows test results, which the registry tool its script names does not print`;
    // The script's words are the registry tool's; the program they start must be that tool too.
    if (base.tracksNodeModules) return `the repository commits node_modules/, so the program its ${hook} starts may be its own`;
    const shared = this.deps.deps.find((d) => d.kind === 'node_modules' && d.target === join(this.scope.run.repo, 'node_modules'));
    const notTheTool = hookProgramNotTheTool(shared?.source ?? join(worktree, 'node_modules'), script);
    if (notTheTool) return notTheTool;
    return null;
  }

  /**
   * Whether the baseline cell writes build caches for the later cells, and where: they need a
   * private writable layer over a read-only one, which host and docker cells get from a root
   * runner (qemu and swarm cells are not given them yet). Null: every cell compiles afresh.
   */
  baselineCacheEnv(): Record<string, string> | null {
    if (!this.warmCaching()) return null;
    this.baselineCaching = true;
    return baselineCacheEnv(this.scope.run.repo);
  }

  private warmCaching(): boolean {
    const { request, deps } = this.scope;
    return request.warm_caches && this.layers === 'overlay' && ['host', 'docker'].includes(deps.provider.name);
  }

  private cacheDir: string | null = null;
  private baselineCaching = false;
  private baselineEnded!: () => void;
  /** Settles when the baseline phase is over (its caches kept or not, or kept from an interrupted run). */
  private readonly baselineOver = new Promise<void>((resolve) => (this.baselineEnded = resolve));

  /** The baseline phase is over: cells that waited for its caches go on. */
  baselineSettled(): void {
    this.baselineIsOver = true;
    this.baselineEnded();
  }

  private baselineIsOver = false;
  /** Whether the repository is a Go module (looked up once per run). */
  private goModule: boolean | null = null;

  /**
   * Whether a cell waits for the baseline: attempts start with it, and a cell of theirs that
   * ran before the baseline kept its build cache would compile everything afresh beside it,
   * on the same cores. Only where there is such a cache to wait for (a Go module; what
   * BUILD_CACHES covers).
   */
  private waitsForBaseline(purpose: string): boolean {
    return (
      this.warmCaching() &&
      !purpose.startsWith('baseline') &&
      purpose !== 'install' &&
      (this.goModule ??= existsSync(join(this.scope.run.repo, 'go.mod')))
    );
  }

  /**
   * Takes the caches the baseline cell left in its worktree (before the worktree goes): every
   * later cell of the run sees them, read-only with a private writable layer.
   */
  async keepBaselineCaches(worktree: string): Promise<void> {
    const dir = join(attemptsDir(await locateRepository(this.scope.run.repo)), runCacheDirName(this.scope.run.runId));
    let kept: KeptCache[];
    try {
      kept = keepBaselineCaches(worktree, dir);
    } catch (e) {
      this.scope.deps.progress(
        `baseline: its build cache could not be kept (${(e as Error).message.split('\n')[0]}); every cell compiles afresh`,
      );
      return;
    }
    if (kept.length === 0) return;
    this.cacheDir = dir;
    this.useBuildCaches(kept);
    this.scope.deps.progress(
      `baseline: ${kept.map((c) => c.kind).join(', ')} kept for the run's later cells (read-only, a private layer each)`,
    );
  }

  /** The run's caches go with the run; one that will not go is said and left to gc, never ending the run. */
  removeCaches(): void {
    if (!this.cacheDir) return;
    try {
      removeKeptCaches(this.cacheDir);
    } catch (e) {
      this.scope.deps.progress(
        `cleanup: the run's build cache could not be removed (${(e as Error).message.split('\n')[0]}); forge-runner gc --repo ${this.scope.run.repo} removes it later`,
      );
    }
    this.cacheDir = null;
  }

  private useBuildCaches(kept: KeptCache[]): void {
    this.caches = kept;
    for (const c of kept)
      this.dependencies.push({
        kind: c.kind,
        source: c.source,
        target: c.target,
        detail: `${c.variable}, written by the baseline cell`,
        shared: `${c.kind} from the baseline cell, ${this.layers === 'overlay' ? 'read-only + overlay' : 'read-only'}, for this run only`,
      });
  }

  /**
   * A worktree whose cleanup fails (a cell can make a tree hard to remove) must not end the
   * run and lose every other attempt's result: the failure is said, gc finishes the job.
   */
  async cleanUp(wt: AttemptWorktree, how: { keepBranch?: boolean } = {}): Promise<void> {
    await destroyAttemptWorktree(wt, how).catch((e: Error) =>
      this.scope.deps.progress(
        `cleanup: ${wt.attemptId} could not be removed (${e.message.split('\n')[0]}); forge-runner gc --repo ${this.scope.run.repo} removes it later`,
      ),
    );
  }
}

/** The `scripts[name]` of the package.json at the top of `dir` (read without following links), or null. */
function npmScript(dir: string, name: string): string | null {
  const r = readFileBeneath(dir, 'package.json', 4 * 1024 * 1024);
  if (r.kind !== 'ok') return null;
  try {
    const script = (JSON.parse(r.bytes.toString('utf8')) as { scripts?: Record<string, unknown> }).scripts?.[name];
    return typeof script === 'string' ? script : null;
  } catch {
    return null;
  }
}
