import type { FixReport } from '../../protocol/fixReport.js';
import { InputError } from '../../protocol/inputError.js';
import type { CellResult } from '../../protocol/cellResult.js';
import { type AttemptWorktree, createAttemptWorktree, destroyAttemptWorktree } from '../../workspace/attemptWorktree.js';
import { describeSharedDep, type SharedDependencies } from '../dependencies/detectSharedDeps.js';
import { readJunitReports, snapshotJunitReports } from '../verdicts/junitReports.js';
import { TEST_REPORTING_ENV, testOutputOf } from '../verdicts/testRunOutput.js';
import type { TestReport } from '../verdicts/testReport.js';
import type { RunScope } from './fixRun.js';
import { judgeTestRun, type Verdict } from '../verdicts/judgeTestRun.js';
import { hookWantedNetwork, isNpmTestCommand, splitNpmStages } from '../verdicts/npmLifecycle.js';
import { differentHookFailure } from '../verdicts/hookComparison.js';
import { plain } from '../verdicts/testReport.js';
import { createHash } from 'node:crypto';
import { readFileBeneath } from '../../workspace/openBeneath.js';

/**
 * A cell whose worktree was withheld (the hazard walk after it could not finish): nothing may
 * use that tree again, so the cell fails whatever it ran for (an attempt, the baseline, the
 * install, ground truth), and the tree is only removed. Bad input: the repository's code did it.
 */
export class WorktreeWithheldError extends InputError {}

/** A test cell's result, its console, and the report its build tool wrote (null: none). */
export interface TestRun {
  result: CellResult;
  output: string;
  written: TestReport | null;
}

/**
 * The cells of one run: every command of every phase goes through here, so each is labelled
 * with its run, purpose and attempt, sees the run's shared dependencies, and is recorded.
 */
export class RunCells {
  private deps!: SharedDependencies;
  /** The shared dependencies as the report names them. */
  dependencies: FixReport['dependencies'] = [];
  private sharedSpec!: { mount_at: string; shared_deps: { source: string; target: string; layer: 'overlay' | 'read-only' }[] };
  private readonly layers: 'overlay' | 'read-only';

  constructor(private readonly scope: RunScope) {
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

  async cell(
    worktree: string,
    command: string,
    purpose: string,
    attemptIdx: number | null,
    how: { allowNet?: string[]; noDeps?: boolean; env?: Record<string, string> } = {},
  ): Promise<CellResult> {
    const { run, request, deps } = this.scope;
    // Test runs name their tests (regressions need the baseline's passing ones).
    const env = {
      ...(how.noDeps ? {} : this.deps.env),
      ...(purpose === 'run_command' || purpose === 'install' ? {} : TEST_REPORTING_ENV),
      ...how.env,
    };
    const allowNet = [...new Set([...request.allow_net, ...(how.allowNet ?? [])])];
    const r = await deps.provider.run(
      {
        image: run.image,
        worktree,
        ...(how.noDeps ? { mount_at: run.repo } : this.sharedSpec),
        cmd: command,
        env,
        allow_net: allowNet.length > 0 ? allowNet : false,
        capture_diff: purpose !== 'install',
        timeout_s: request.cell_timeout_s,
        labels: {
          'forge.run': run.runId,
          'forge.purpose': purpose,
          ...(attemptIdx === null ? {} : { 'forge.attempt': String(attemptIdx) }),
        },
      },
      deps.signal ? { signal: deps.signal } : {},
    );
    deps.store.recordCell(run.runId, attemptIdx, purpose, r, command);
    if (r.worktree_withheld) throw new WorktreeWithheldError(r.worktree_withheld);
    return r;
  }

  /**
   * The test command in a cell, and what it said: the console, and the report its build tool
   * wrote (Maven, Gradle: JUnit XML in the worktree), read before the worktree goes.
   */
  async testCell(worktree: string, purpose: string, attemptIdx: number | null, env?: Record<string, string>): Promise<TestRun> {
    const before = snapshotJunitReports(worktree);
    const result = await this.cell(worktree, this.scope.run.testCmd, purpose, attemptIdx, env ? { env } : {});
    return { result, output: testOutputOf(result), written: readJunitReports(worktree, before) };
  }

  /**
   * The test command in a cell, judged against the baseline. A run that exited non-zero is
   * green only through npm's hook rule (its tests passed, a post hook then failed for want of
   * the network), which rests on what the output says, and output is the command's to write:
   * such a verdict is kept only when the same command with npm's hooks off
   * (npm_config_ignore_scripts) exits 0 in a second cell. Only for an npm test command.
   */
  async judgedTestCell(
    worktree: string,
    purpose: string,
    attemptIdx: number | null,
    baseline: TestReport | null,
  ): Promise<{ test: TestRun; verdict: Verdict }> {
    const npmHooks = isNpmTestCommand(this.scope.run.testCmd);
    const test = await this.testCell(worktree, purpose, attemptIdx);
    const verdict = judgeTestRun(test.result.exit_code, test.output, baseline, test.written, { npmHooks });
    if (!verdict.green || verdict.exit_code === 0) return { test, verdict };
    const alone = await this.testCell(worktree, `${purpose}_without_hooks`, attemptIdx, { npm_config_ignore_scripts: 'true' });
    const hook = verdict.hook_failures[0]?.hook ?? 'post';
    if (alone.result.exit_code !== 0) {
      this.scope.deps.progress(
        `${purpose}: the output said a ${hook} hook failed after the tests passed, but the tests alone (hooks off) exit ${alone.result.exit_code}: counted as failing`,
      );
      return { test: alone, verdict: judgeTestRun(alone.result.exit_code, alone.output, baseline, alone.written, { npmHooks: false }) };
    }
    // The hook's failure is the change's unless the same hook fails on the base commit too.
    const attemptHook = splitNpmStages(plain(test.output)).at(-1)?.output ?? '';
    const why = await this.hookFailsOnBase(worktree, hook, attemptHook);
    if (why === null) return { test, verdict };
    this.scope.deps.progress(`${purpose}: the ${hook} hook failed after the tests passed, and ${why}: counted as failing`);
    return { test, verdict: { ...verdict, hook_failures: [], green: false } };
  }

  private readonly hookOnBase = new Map<
    string,
    Promise<{ script: string | null; exit: number; network: boolean; output: string; inputs: Map<string, string | null> }>
  >();

  /**
   * Why a failed npm hook of `worktree` is held against it, or null when it is not: the hook
   * must be the base commit's own script, run on files the attempt did not change, and fail on
   * the base commit too (run once per run, alone, on a fresh checkout), for want of the
   * network, and in the same way: no check failing that passes there.
   */
  private async hookFailsOnBase(worktree: string, hook: string, attemptOutput: string): Promise<string | null> {
    if (hook !== 'posttest') return `only a posttest hook is discounted (not ${hook})`;
    const { run } = this.scope;
    let onBase = this.hookOnBase.get(hook);
    if (!onBase) {
      onBase = (async () => {
        const wt = await createAttemptWorktree(run.repo, run.base, `${run.runId}-hook`);
        try {
          const script = npmScript(wt.path, hook);
          const inputs = hookInputs(wt.path, script);
          if (script === null) return { script, exit: 0, network: false, output: '', inputs };
          const r = await this.cell(wt.path, `npm run ${hook}`, 'hook_on_base', null);
          // The hook's own stage, as the attempt's is cut from its npm test run (no banner).
          const all = testOutputOf(r);
          const output = splitNpmStages(plain(all)).find((st) => st.name === hook)?.output ?? all;
          return { script, exit: r.exit_code, network: r.exit_code !== 0 && hookWantedNetwork(output), output, inputs };
        } finally {
          await this.cleanUp(wt);
        }
      })();
      this.hookOnBase.set(hook, onBase);
    }
    const base = await onBase;
    if (base.script === null) return `the base commit's package.json has no ${hook} script`;
    if (npmScript(worktree, hook) !== base.script) return `its ${hook} script is not the base commit's`;
    const changed = [...base.inputs].find(([rel, sha]) => fileHash(worktree, rel) !== sha);
    if (changed) return `the attempt changed ${changed[0]}, which the ${hook} hook reads`;
    if (!base.network)
      return `on the base commit the same hook ${base.exit === 0 ? 'passes' : `fails (exit ${base.exit}) for another reason`}`;
    return differentHookFailure(attemptOutput, base.output);
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

/** Files a hook's command names (`node e2e.js`, `sh scripts/check.sh`) and npm's project config, by content hash (null: absent). */
function hookInputs(dir: string, script: string | null): Map<string, string | null> {
  const names = new Set(['.npmrc', ...(script ?? '').split(/\s+/).map((t) => t.replace(/^['"]|['"]$/g, '').replace(/^\.\//, ''))]);
  const out = new Map<string, string | null>();
  for (const name of names) {
    if (name === '' || name.startsWith('-') || name.includes('..') || name.startsWith('/')) continue;
    const sha = fileHash(dir, name);
    if (sha !== null || name === '.npmrc') out.set(name, sha);
  }
  return out;
}

function fileHash(dir: string, rel: string): string | null {
  const r = readFileBeneath(dir, rel, 16 * 1024 * 1024);
  return r.kind === 'ok' ? createHash('sha256').update(r.bytes).digest('hex') : null;
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
