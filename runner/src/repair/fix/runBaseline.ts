import { InputError } from '../../protocol/inputError.js';
import { createAttemptWorktree } from '../../workspace/attemptWorktree.js';
import { type BrokenEnvironment, classifyBaseline } from '../verdicts/classifyBaseline.js';
import { isNpmTestCommand } from '../verdicts/npmLifecycle.js';
import { judgedBaseline, judgeTestRun, runReport, type Verdict } from '../verdicts/judgeTestRun.js';
import { failingOf, type FixRule, type Judged } from '../verdicts/failingSet.js';
import { testsNamedByIssue } from '../verdicts/issueTests.js';
import type { FixRequest } from '../../protocol/fixRequest.js';
import { storedVerdict } from '../verdicts/storedVerdict.js';
import { deniedEgressLine, deniedEgressOf } from '../verdicts/deniedEgress.js';
import { parseTestOutput } from '../verdicts/parsers.js';
import { countTests, emptyReport, type TestOutcome, type TestReport } from '../verdicts/testReport.js';
import { hookNote, type RunScope, throwIfCancelled } from './fixRun.js';
import { type RunCells, runEnd, type TestRun } from './runCells.js';

export interface BaselineInput extends RunScope {
  cells: RunCells;
}

/** The base commit's test run: its verdict, and the per-test report regressions are judged against. */
export interface Baseline {
  verdict: Verdict;
  report: TestReport | null;
  /** The report with whether its failing list is whole: what attempts are judged against. */
  judged: Judged;
}

/** The base commit's tests could not run (a command or module missing, no test ran, ...): the run ends with this. */
export interface BrokenBaseline {
  broken: BrokenEnvironment;
  verdict: Verdict;
}

/**
 * Phase 2, baseline: the failing run on the base commit is the oracle (kept across a resume).
 * A broken environment is returned (the run's report says it: fixReport.ts); a green baseline
 * ends the run unless the request allows it (InputError).
 */
export async function runBaseline(input: BaselineInput): Promise<Baseline | BrokenBaseline> {
  const { run, request, deps, cells } = input;
  const { store, progress } = deps;
  const stored = run.resumed ? parseStoredBaseline(store.getRun(run.runId)?.baseline_json ?? null, request) : null;
  let baseline: Baseline;
  if (stored) {
    baseline = stored;
    progress('baseline: kept from the interrupted run');
  } else {
    progress('baseline: running the tests on the base commit');
    const baselineWt = await createAttemptWorktree(run.repo, run.base, `${run.runId}-baseline`, {
      include: run.trust.include,
      onSkipped: progress,
    });
    let baselineTest: TestRun;
    let crash: string | null;
    try {
      const cacheEnv = cells.baselineCacheEnv();
      ({ test: baselineTest, crash } = await cells.testCellOnce(baselineWt.path, 'baseline', null, undefined, cacheEnv ?? undefined));
      if (cacheEnv && !crash) await cells.keepBaselineCaches(baselineWt.path);
    } finally {
      await cells.cleanUp(baselineWt);
    }
    throwIfCancelled(deps.signal);
    const { result: baselineRun, output: baselineOutput } = baselineTest;
    const egressDenied = deniedEgressOf(baselineRun.egress_denied);
    const verdict = judgeTestRun(baselineRun.exit_code, baselineOutput, null, baselineTest.written, {
      npmHooks: isNpmTestCommand(run.testCmd),
      end: runEnd(baselineTest),
      egressDenied,
    });
    const report = runReport(baselineTest.written, parseTestOutput(baselineOutput), baselineTest.logWhole);
    // A baseline whose tests never ran says nothing about the code: stop before any attempt.
    const broken = crash
      ? {
          cause: 'resources' as const,
          detail: `the test runner died before reporting any result, twice: ${crash}`,
          fix: 'run it again when fewer runs overlap on this machine, or give cells more memory (--memory MIB)',
        }
      : classifyBaseline({
          exitCode: baselineRun.exit_code,
          timedOut: baselineRun.timed_out,
          output: baselineOutput,
          report,
          testCmd: run.testCmd,
          cellTimeoutS: request.cell_timeout_s,
          egressDenied,
        });
    if (broken) return { broken, verdict };
    store.setBaseline(run.runId, {
      verdict,
      tests: report ? [...report.tests] : [],
      framework: report?.framework ?? null,
    });
    baseline = { verdict, report, judged: judgedBaseline(report, verdict, fixRuleOf(request, report)) };
  }
  const v = baseline.verdict;
  const denied = deniedEgressLine(v.egress_denied, 'the tests');
  progress(
    `baseline: exit ${v.exit_code}, ${v.passed} passed, ${v.failed} failed${v.framework ? ` (${v.framework})` : ''}${hookNote(v)}${denied ? `; ${denied}` : ''}`,
  );
  const named = baseline.judged.rule?.named ?? [];
  if (named.length > 0 && !request.strict)
    progress(
      `baseline: the issue names ${named.length === v.failing.length ? 'its failing test(s)' : `${named.length} of its ${v.failing.length} failing tests`}: ${named.slice(0, 5).join(', ')}`,
    );
  // Green as a verdict reads it: a command that exits 0 after a run that names a failure
  // (`pytest unit; pytest e2e`, the last one passing) has a failing test to fix.
  if (v.green && !request.allow_green_baseline) {
    store.finishRun(run.runId, 'failed', null, { error: 'green baseline' });
    throw new InputError(
      `the tests already pass on the base commit (${run.testCmd}), so there is no failing test to fix; write one that shows the bug, or pass --allow-green-baseline`,
    );
  }
  return baseline;
}

/** How the run holds attempts to this baseline: the user's --strict, the failing tests the issue names. */
function fixRuleOf(request: Pick<FixRequest, 'strict' | 'issue'>, report: TestReport | null): FixRule {
  return { strict: request.strict, named: testsNamedByIssue(request.issue, [...failingOf(report)]) };
}

function parseStoredBaseline(json: string | null, request: Pick<FixRequest, 'strict' | 'issue'>): Baseline | null {
  if (!json) return null;
  const stored = JSON.parse(json) as {
    verdict: Verdict;
    tests: [string, TestOutcome][];
    framework: string | null;
  };
  stored.verdict = storedVerdict(JSON.stringify(stored.verdict));
  const report = stored.framework ? countTests({ ...emptyReport(stored.framework), tests: new Map(stored.tests) }) : null;
  return { verdict: stored.verdict, report, judged: judgedBaseline(report, stored.verdict, fixRuleOf(request, report)) };
}
