import type { Judged } from '../verdicts/failingSet.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AttemptRow } from '../../store/runStore.js';
import {
  attemptsDir,
  createAttemptWorktree,
  destroyAttemptWorktree,
  locateAttemptWorktree,
  locateRepository,
} from '../../workspace/attemptWorktree.js';
import { captureApplicablePatch } from '../../workspace/captureWorktreeDiff.js';
import { EMPTY_PATCH, patchFromStore } from '../../workspace/patchBytes.js';
import { type AgentOutcome, runAgentLoop } from '../agentLoop.js';
import { isBudgetStop, NO_USAGE, RunTokenBudget, type UsageTotals } from '../usage/usageAccounting.js';
import { patchLines } from '../selectWinner.js';
import { someNames } from '../verdicts/someNames.js';
import type { Verdict } from '../verdicts/judgeTestRun.js';
import { type AttemptResult, hookNote, regressionNote, type RunScope, throwIfCancelled } from './fixRun.js';
import { purgePythonCaches } from './purgePythonCaches.js';
import { baseTestsNote, verdictTree } from './verdictTree.js';
import { type RunCells, WorktreeWithheldError } from './runCells.js';
import { AttemptTestRuns, RunVerdicts, treeKey } from './verdictReuse.js';
import type { AttemptWorktree } from '../../workspace/attemptWorktree.js';
import { type FailingFirstPlan, failingFirstPlan, plural } from '../verdicts/failingFirst.js';
import { failingFirstVerdict, judgeTargeted, passedEvery } from './failingFirstVerdict.js';
import { testOutputOf } from '../verdicts/testRunOutput.js';
import type { EarlyGroundTruths } from './earlyGroundTruth.js';
import type { PatchBytes } from '../../workspace/patchBytes.js';

export interface AttemptsInput extends RunScope {
  cells: RunCells;
  /**
   * The baseline's per-test report: an attempt's regressions are judged against it. Attempts
   * start while the baseline still runs (their agents need it only for the verdict); when the
   * baseline ends the run instead, the run's signal aborts before this settles.
   */
  baseline: Promise<Judged | null>;
  /** Where an attempt's run_tests starts the ground truth of its change on an idle core (null: never early). */
  early: EarlyGroundTruths | null;
}

export interface AttemptInput extends AttemptsInput {
  /** The run's verdicts by tree: attempts with the same change share one. */
  verdicts: RunVerdicts;
  /** How verdicts run the baseline's failing tests before the whole suite (or that they do not): planned once, after the baseline. */
  failingFirst: Promise<FailingFirstPlan>;
  /** The plan once the baseline is known (before: null): an attempt's run_tests runs the failing tests first too. */
  failingFirstNow: () => FailingFirstPlan | null;
  index: number;
  temperature: number;
  /** The run's tokens, shared by its attempts (--max-run-tokens). */
  runBudget: RunTokenBudget;
}

/** What judging an attempt needs, once the baseline is known. */
interface JudgeInput extends AttemptInput {
  baselineReport: Judged | null;
  plan: FailingFirstPlan;
}

/**
 * Phase 3, attempts: K in parallel, bounded. On a resume the attempts that finished (or
 * failed) before the interruption are kept as the store has them; the rest are redone.
 */
export async function runAttempts(input: AttemptsInput): Promise<AttemptResult[]> {
  const { run, request, deps } = input;
  const k = run.temperatures.length;
  const concurrency = Math.max(1, Math.min(request.concurrency ?? k, k));
  const done = new Map(
    deps.store
      .attempts(run.runId)
      .filter((a) => a.status === 'finished' || a.status === 'failed')
      .map((a) => [a.idx, a]),
  );
  const verdicts = new RunVerdicts();
  // Shared by the K attempts; a resumed run's kept attempts spent part of it already.
  const runBudget = new RunTokenBudget(
    request.max_run_tokens ?? null,
    [...done.values()].reduce((n, a) => n + a.tokens, 0),
  );
  const usage = deps.store.attemptUsage(run.runId);
  const failingFirst = input.baseline.then((baselineReport) => planFailingFirst(input, baselineReport));
  // Awaited by each attempt when it is judged; a baseline that ends the run aborts them first.
  failingFirst.catch(() => undefined);
  let planned: FailingFirstPlan | null = null;
  failingFirst.then(
    (p) => (planned = p),
    () => undefined,
  );
  const results = await boundedParallel(
    run.temperatures.map((t, i) => ({ i, t })),
    concurrency,
    async ({ i, t }) => {
      const previous = done.get(i);
      if (previous) {
        deps.progress(`attempt ${i}: finished before the interruption, kept`);
        return keptAttempt(run.repo, run.base, previous, usage.get(i) ?? NO_USAGE);
      }
      // A killed runner may have left this attempt's worktree and branch behind.
      await destroyAttemptWorktree({
        repo: run.repo,
        path: join(attemptsDir(await locateRepository(run.repo)), `${run.runId}-a${i}`),
        branch: `forge/attempt/${run.runId}-a${i}`,
      }).catch(() => undefined);
      return runAttempt({ ...input, verdicts, failingFirst, failingFirstNow: () => planned, index: i, temperature: t, runBudget });
    },
    deps.signal,
  );
  throwIfCancelled(deps.signal);
  return results;
}

/**
 * One attempt: the agent loop in its own worktree, then the verdict from a fresh test cell
 * and the patch as it would be applied. A failure ends this attempt only; a cancel leaves it
 * unfinished (the run then records it as cancelled), so a resumed run redoes it.
 */
export async function runAttempt(input: AttemptInput): Promise<AttemptResult> {
  const { run, request, deps, cells, index, temperature } = input;
  const { store, progress, signal } = deps;
  const { runId } = run;
  const attemptId = `${runId}-a${index}`;
  const result: AttemptResult = {
    index,
    attemptId,
    temperature,
    wt: null,
    outcome: null,
    verdict: null,
    patch: EMPTY_PATCH,
    warnings: [],
    omitted: [],
    generated: [],
    error: null,
  };
  const testRuns = new AttemptTestRuns();
  const { verdicts } = input;
  store.startAttempt(runId, index);
  progress(`attempt ${index}: started (temperature ${temperature})`);
  try {
    result.wt = await createAttemptWorktree(run.repo, run.base, attemptId, { include: run.trust.include, onSkipped: progress });
    const wt = result.wt;
    result.outcome = await runAgentLoop({
      attemptIndex: index,
      worktree: wt.path,
      issue: request.issue,
      testCmd: run.testCmd,
      temperature,
      model: deps.model,
      budget: {
        maxTurns: request.max_turns,
        deadline: Date.now() + request.timeout_per_attempt_s * 1000,
        maxTokens: request.max_tokens,
        run: input.runBudget,
      },
      runCell: async (command, purpose, turn) => {
        if (purpose !== 'run_tests' || !request.reuse_verdicts) {
          if (purpose !== 'run_tests') {
            testRuns.commandRan();
            input.early?.drop(index);
          }
          const r = await cells.cell(wt.path, command, purpose, index);
          if (purpose === 'run_tests') testRuns.latestOutput = testOutputOf(r).text;
          return r;
        }
        // The tree it runs on is named first: a verdict on the same tree later takes this run.
        let tree: PatchBytes | null = null;
        const test = await testRuns.run(
          turn,
          () =>
            treeKeyOf(wt, run.base, (patch) => {
              tree = patch;
            }),
          async () => {
            // Once the baseline named its failing tests, a change runs them first: an attempt that
            // has not fixed them yet learns so from them alone, without paying the whole suite.
            // Chosen when the cell starts: a run_tests that waited may start after the baseline.
            const targeted = async () => {
              const plan = tree ? await planWhenStarting(input) : null;
              const passedBefore =
                plan?.kind === 'targeted' && testRuns.latestOutput !== null && passedEvery(plan.run.tests, testRuns.latestOutput);
              if (tree && plan?.kind === 'targeted' && !passedBefore) return plan.run;
              // The whole suite: its cell has its slot, so the ground truth gets only a core left idle (earlyGroundTruth.ts).
              if (tree) input.early?.testsStarted(index, tree);
              return null;
            };
            const first = await cells.testCell(wt.path, 'run_tests', index, undefined, false, targeted);
            if (!first.selected) return first;
            const step = judgeTargeted(first.selected, first, await input.baseline);
            const n = plural(first.selected.tests.length, 'failing test');
            if (step.red) {
              progress(
                `attempt ${index}: its run_tests is red in ${step.seconds} s on the baseline's ${n} (${step.why}); the rest of the suite not run`,
              );
              return { ...first, targetedRed: step.red };
            }
            progress(`attempt ${index}: its run_tests: ${step.why} (targeted run, ${step.seconds} s): running the whole suite`);
            // Some of them failed again: most likely red, so its ground truth does not start beside
            // these tests (it may still start when they end green: testsEnded).
            const stillRed = step.stillFailing.length > 0;
            return cells.testCell(wt.path, 'run_tests', index, undefined, false, async () => {
              if (tree && !stillRed) input.early?.testsStarted(index, tree);
              return null;
            });
          },
        );
        if (!test.targetedRed) {
          if (tree) input.early?.testsEnded(index, tree, test);
          return test.result;
        }
        // The model reads which tests ran: only these, and the whole suite once they pass. Last:
        // what it reads of a long output is its end.
        const only = test.targetedRed.targeted!;
        const note = `\n[forge: only the baseline's ${plural(only.tests.length, 'failing test')} ran (${only.how}), and ${only.still_failing.length === 1 ? 'it fails' : 'they fail'} again; run_tests runs the whole suite once they pass]\n`;
        return { ...test.result, output: test.result.output + note };
      },
      fileWritten: (rel) => {
        testRuns.fileWritten(rel);
        input.early?.drop(index);
      },
      recordTurn: (turn, reply, results) =>
        store.recordTurn(
          runId,
          index,
          turn,
          reply,
          results.map((r) => ({ tool: r.call.name, arguments: r.call.arguments, result: r.result.slice(0, 4000) })),
          reply.usage,
        ),
      ...(signal ? { signal } : {}),
    });
    throwIfCancelled(signal);
    // A budget stop is an early stop like max_turns and deadline: what it produced is judged and
    // kept for review (its worktree, branch and patch), and it is shown as "budget".
    if (isBudgetStop(result.outcome.stop))
      progress(
        `attempt ${index}: stopped for its budget after ${plural(result.outcome.turns, 'turn')}: ${result.outcome.stop === 'tokens' ? `its --max-tokens ${request.max_tokens}` : `the run's --max-run-tokens ${request.max_run_tokens}`} spent (${result.outcome.tokens} tokens in and out); judging what it made`,
      );
    // The agent worked while the baseline ran: its verdict needs the baseline's report.
    const judge: JudgeInput = { ...input, baselineReport: await input.baseline, plan: await input.failingFirst };
    throwIfCancelled(signal);
    const { baselineReport } = judge;
    // The verdict comes from a fresh cell, whatever the model claimed, and runs the base
    // commit's tests: an attempt that changed tests or their configuration is judged on a
    // fresh tree of its code with the base's tests (verdictTree.ts), its worktree untouched.
    await purgePythonCaches(wt.path);
    const captured = await captureApplicablePatch({ location: wt.location, base: run.base });
    if (captured.incomplete)
      throw new Error(`its change could not be captured completely (${captured.incomplete}), so it cannot be reviewed or applied`);
    const baseTests = await verdictTree(run.repo, run.base, captured.patch);
    // --no-reuse-verdicts: no tree is named, so every verdict is judged in a cell of its own.
    const key = request.reuse_verdicts ? treeKey(captured) : null;
    let change = captured;
    if (baseTests) {
      // Its code with the base's tests: the same change makes the same tree.
      result.verdict = await verdicts.judge(key && `base-tests:${key}`, index, () =>
        judgeOnTree(judge, baseTests.commit, `${attemptId}-verdict`),
      );
      progress(`attempt ${index}: ${baseTestsNote(baseTests.changed)}`);
    } else {
      let ranHere = false;
      const earlier = testRuns.sameTree(key);
      const judging = { worktree: wt.path, attemptIdx: index, baseline: baselineReport, progress, latestRun: testRuns.latestOutput };
      result.verdict = await verdicts.judge(
        key,
        index,
        async () => {
          ranHere = true;
          const { test: final, verdict } = await failingFirstVerdict(cells, judge.plan, judging);
          throwIfCancelled(signal);
          if (final.result.diff?.incomplete)
            throw new Error(
              `its change could not be captured completely (${final.result.diff.incomplete}), so it cannot be reviewed or applied`,
            );
          return verdict;
        },
        earlier
          ? async () => {
              // Its run_tests ran only the baseline's failing tests on this tree, and they failed again: red as it stands.
              const red = earlier.test.targetedRed;
              if (red)
                return {
                  ...red,
                  reused_from: `turn ${earlier.turn + 1}'s run_tests of the baseline's failing tests (the tree is unchanged since)`,
                };
              // A run that crashed is tried again in a cell here, which may leave things in the tree.
              ranHere = true;
              const { verdict } = await failingFirstVerdict(cells, judge.plan, judging, earlier.test);
              return { ...verdict, reused_from: `turn ${earlier.turn + 1}'s run_tests (the tree is unchanged since)` };
            }
          : undefined,
        testRuns.onlyItsPatch(captured.paths),
      );
      if (ranHere) {
        // What the verdict's run left in the tree is part of what its branch would hold
        // (judged here; a verdict taken from another attempt ran no cell in this tree).
        change = await captureApplicablePatch({ location: wt.location, base: run.base });
        if (change.incomplete)
          throw new Error(`its change could not be captured completely (${change.incomplete}), so it cannot be reviewed or applied`);
      }
    }
    if (result.verdict.reused_from) progress(`attempt ${index}: verdict reused from ${result.verdict.reused_from}`);
    throwIfCancelled(signal);
    result.patch = change.patch;
    result.warnings = baseTests ? [...change.warnings, baseTestsNote(baseTests.changed)] : change.warnings;
    result.omitted = change.omitted;
    result.generated = change.generated;
    if (change.generated.length > 0)
      progress(
        `attempt ${index}: generated, not part of the patch: ${change.generated.slice(0, 5).join(', ')}${change.generated.length > 5 ? ', ...' : ''} (a tool marked it as its cache)`,
      );
    if (change.omitted.length > 0)
      progress(
        `attempt ${index}: left out of its patch: ${change.omitted
          .slice(0, 5)
          .map((o) => `${o.path} (${o.reason})`)
          .join(', ')}${change.omitted.length > 5 ? ', ...' : ''}`,
      );
    for (const w of change.warnings) progress(`attempt ${index}: warning: ${w}`);
    // A red attempt does not win: its ground truth started early stops (a green one's goes on until selection).
    if (!result.verdict.green) input.early?.drop(index);
    store.finishAttempt(runId, index, {
      verdict: result.verdict,
      patch: result.patch,
      turns: result.outcome.turns,
      tokens: result.outcome.tokens,
      stop: result.outcome.stop,
    });
    if (result.verdict.could_not_run)
      progress(
        `attempt ${index}: its tests could not run (${result.verdict.could_not_run}) after ${plural(result.outcome.turns, 'turn')}: not ranked`,
      );
    else
      progress(
        `attempt ${index}: ${verdictWord(result.verdict)} after ${plural(result.outcome.turns, 'turn')} (${result.outcome.stop}), ${result.verdict.passed} passed, ${result.verdict.failed} failed, ${changedLines(result.patch)}${hookNote(result.verdict)}${regressionNote(result.verdict)}${failingBeforeNote(result.verdict)}`,
      );
  } catch (e) {
    input.early?.drop(index);
    if (signal?.aborted) {
      // Not recorded as finished: a resumed run redoes this attempt from scratch.
      if (result.wt) await destroyAttemptWorktree(result.wt).catch(() => undefined);
      result.wt = null;
      result.error = 'cancelled';
      return result;
    }
    result.error = (e as Error).message.split('\n')[0] ?? 'error';
    // A withheld tree is never read, committed or offered again: it goes now.
    if (e instanceof WorktreeWithheldError && result.wt) {
      await cells.cleanUp(result.wt);
      result.wt = null;
    }
    store.finishAttempt(runId, index, {
      error: result.error,
      turns: result.outcome?.turns ?? 0,
      tokens: result.outcome?.tokens ?? 0,
      stop: result.outcome?.stop ?? null,
    });
    progress(`attempt ${index}: failed: ${result.error}`);
  }
  return result;
}

/** The verdict of a tree the runner made (the attempt's code, the base's tests), in a worktree of its own. */
async function judgeOnTree(input: JudgeInput, commit: string, id: string): Promise<Verdict> {
  const { run, cells, index, baselineReport } = input;
  const tree = await createAttemptWorktree(run.repo, commit, id, { include: run.trust.include, onSkipped: input.deps.progress });
  try {
    const at = { worktree: tree.path, attemptIdx: index, baseline: baselineReport, progress: input.deps.progress };
    return (await failingFirstVerdict(cells, input.plan, at)).verdict;
  } finally {
    await cells.cleanUp(tree);
  }
}

/** An attempt that finished before the interruption: its verdict and patch come from the store. */
async function keptAttempt(repo: string, base: string, a: AttemptRow, usage: UsageTotals): Promise<AttemptResult> {
  const path = join(attemptsDir(await locateRepository(repo)), a.attempt_id);
  const location = existsSync(path) ? await locateAttemptWorktree(repo, path) : null;
  return {
    index: a.idx,
    attemptId: a.attempt_id,
    temperature: a.temperature,
    wt: location
      ? { repo, attemptId: a.attempt_id, path, branch: `forge/attempt/${a.attempt_id}`, baseCommit: base, included: [], location }
      : null,
    outcome: { turns: a.turns, tokens: a.tokens, usage, stop: keptStop(a.stop), summary: null },
    verdict: a.verdict_json ? (JSON.parse(a.verdict_json) as Verdict) : null,
    patch: patchFromStore(a.patch),
    warnings: [],
    omitted: [],
    generated: [],
    error: a.error,
  };
}

/** Pure: the stop a kept attempt recorded (older stores recorded none: finish, as they were shown). */
function keptStop(stop: string | null): AgentOutcome['stop'] {
  const known: AgentOutcome['stop'][] = ['finish', 'no_tool_calls', 'max_turns', 'deadline', 'tokens', 'run_tokens', 'cancelled'];
  return known.find((k) => k === stop) ?? 'finish';
}

/**
 * Runs `work` on the items, at most `limit` at a time. Once `signal` aborts no further item is
 * started (an attempt still queued then stays queued, and is recorded as skipped); the
 * caller must not read the results of an aborted call, which has holes.
 */
async function boundedParallel<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>, signal?: AbortSignal): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length && !signal?.aborted) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  });
  await Promise.all(lanes);
  return results;
}

/**
 * Whether the run's verdicts run the baseline's failing tests first, said once: how, or why
 * every verdict runs the whole suite. A resumed run plans again from its stored baseline.
 */
function planFailingFirst({ run, request, deps }: AttemptsInput, baselineReport: Judged | null): FailingFirstPlan {
  if (!request.failing_first) return { kind: 'none' };
  const plan = failingFirstPlan(run.testCmd, baselineReport);
  if (plan.kind === 'targeted')
    deps.progress(
      `failing tests first: each verdict runs the baseline's ${plural(plan.run.tests.length, 'failing test')} (${plan.run.how}) before the whole suite`,
    );
  else if (plan.kind === 'whole') deps.progress(`failing tests first: not used, every verdict runs the whole suite: ${plan.why}`);
  return plan;
}

/** How long a cell that starts as the baseline's cell ends waits for its failing tests to be known. */
const PLAN_WAIT_MS = 2000;

/**
 * The failing-tests-first plan as a cell starts: known once the baseline is judged. A cell that
 * starts on the core the baseline's cell just gave back waits a moment for the judging (a
 * bounded wait: a baseline that is tried again holds its plan back much longer).
 */
async function planWhenStarting(input: AttemptInput): Promise<FailingFirstPlan | null> {
  const now = input.failingFirstNow();
  if (now || !input.cells.baselineRan) return now;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), PLAN_WAIT_MS)));
  try {
    return await Promise.race([input.failingFirst.catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The key of the tree an attempt's worktree holds now (stale Python caches gone first, as before a verdict); `named` gets the patch of a tree it names. */
async function treeKeyOf(wt: AttemptWorktree, base: string, named: (patch: PatchBytes) => void): Promise<string | null> {
  await purgePythonCaches(wt.path);
  const captured = await captureApplicablePatch({ location: wt.location, base });
  const key = treeKey(captured);
  if (key !== null) named(captured.patch);
  return key;
}

/** Pure: the tests a verdict names failing before and after (not caused by the change), for its progress line. */
/** "+1 −1 lines": an edited line is one removed and one added, as a diff reads. */
function changedLines(patch: PatchBytes): string {
  const { added, removed } = patchLines(patch);
  return `+${added} −${removed} lines`;
}

/** Green by the tests it made pass itself is green only "so far": the run's issue tests come when every attempt has ended. */
const verdictWord = (v: Verdict) => (!v.green ? 'red' : v.provisional ? 'green so far' : 'green');

function failingBeforeNote(v: Verdict): string {
  const n = v.failing_before;
  if (n.length === 0) return '';
  // Whether these are the issue's is known only when the others are judged (holdToIssueTests).
  if (v.provisional)
    return `; still failing as on the base commit: ${someNames(n)} (if another attempt makes one of them pass, this one is red)`;
  return `; failing before and after, not caused by this change: ${someNames(n)}`;
}
