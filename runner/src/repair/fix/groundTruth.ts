import type { Judged } from '../verdicts/failingSet.js';
import type { FixReport } from '../../protocol/fixReport.js';
import { attemptReason, outputEnding } from '../explainEnding.js';
import { applyPatch } from '../../workspace/applyPatch.js';
import { attemptsDir, createAttemptWorktree, destroyAttemptWorktree, locateRepository } from '../../workspace/attemptWorktree.js';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PatchBytes } from '../../workspace/patchBytes.js';
import type { CandidateGroup, Selection } from '../selectWinner.js';
import type { Verdict } from '../verdicts/judgeTestRun.js';
import { heldToIssueTests, type IssueTests } from '../verdicts/issueTests.js';
import { type PreparedRun, type RunScope, throwIfCancelled } from './fixRun.js';
import { purgePythonCaches } from './purgePythonCaches.js';
import { verdictTree } from './verdictTree.js';
import { type RunCells, WorktreeWithheldError } from './runCells.js';

export type GroundTruth = NonNullable<FixReport['ground_truth']>;

/** Ground truths started early (earlyGroundTruth.ts), as the check after selection uses them. */
export interface EarlyStarted {
  /** The one of exactly `patch`, when it started (every other stops); null when none did. */
  take(patch: PatchBytes): Promise<GroundTruth | null> | null;
  /** Stops what still runs and waits until it is gone. */
  settle(): Promise<void>;
}

export interface GroundTruthInput extends RunScope {
  cells: RunCells;
  /** The selected winner; null when no attempt was green (then there is nothing to check). */
  winner: CandidateGroup | null;
  baselineReport: Judged | null;
  /** Ground truths started early on idle cores: the winner's, when it has one, is taken as is. */
  early: EarlyStarted | null;
  /** The run's issue tests: the ground truth holds the winner to them as its verdict was. */
  issueTests: IssueTests;
  /** Its checkout's name (default `<run>-truth`): each change checked after the first gets its own. */
  truthName?: string;
}

/**
 * Phase 4, ground truth: the winner's diff on a fresh checkout of the base, in a fresh cell.
 * What passed in the attempt's own worktree must pass from the patch alone.
 */
export async function checkGroundTruth(input: GroundTruthInput): Promise<FixReport['ground_truth']> {
  const truth = await groundTruthOfWinner(input);
  if (!truth?.verdict) return truth;
  const verdict = heldToIssueTests(truth.verdict, input.issueTests);
  if (verdict.green !== truth.verdict.green)
    input.deps.progress(
      `ground truth: red: the issue's test(s) ${verdict.issue_tests.filter((n) => !verdict.fixed.includes(n)).join(', ')} fail on a fresh checkout of the change`,
    );
  return { ...truth, verdict };
}

async function groundTruthOfWinner(input: GroundTruthInput): Promise<FixReport['ground_truth']> {
  const { deps, winner, early } = input;
  // Whatever else started early stops now: the winner's ground truth gets the machine.
  const started = winner ? early?.take(winner.patch) : null;
  if (!started) await early?.settle();
  if (!winner) return null;
  const index = /-a(\d+)$/.exec(winner.attempts[0] ?? '')?.[1];
  const who = `attempt ${index ?? winner.attempts[0]}'s change`;
  if (started) {
    deps.progress(`ground truth: ${who} on a fresh checkout of the base commit: started early, on an idle core, when its tests ran`);
    const done = await started;
    await early?.settle();
    throwIfCancelled(deps.signal);
    if (done) return done;
    deps.progress('ground truth: the early run gave its core to other work: running it again');
  } else deps.progress(`ground truth: ${who} on a fresh checkout of the base commit`);
  return groundTruthOf(input, winner.patch, input.truthName ?? `${input.run.runId}-truth`, input.baselineReport, who);
}

/**
 * The winner's ground truth; when its change fails on a fresh checkout, the next green change
 * in the ranking is checked in turn (a change that passed only in its own worktree, with files
 * its patch does not carry, must not hide a real fix ranked after it: red team). The ranking's
 * first ground truth is the one reported when none passes.
 */
export async function groundTruthInRankOrder(
  input: GroundTruthInput,
  selection: Selection,
): Promise<{ groundTruth: FixReport['ground_truth']; selection: Selection }> {
  const first = await checkGroundTruth(input);
  if (isFixed(selection.winner, first)) return { groundTruth: first, selection };
  const who = (g: CandidateGroup) => `attempt ${/-a(\d+)$/.exec(g.attempts[0] ?? '')?.[1] ?? g.attempts[0]}`;
  let n = 1;
  for (const next of selection.ranked.filter((g) => g.verdict.green && g !== selection.winner)) {
    n++;
    throwIfCancelled(input.deps.signal);
    input.deps.progress(
      `ground truth: ${who(selection.winner!)}'s change failed on a fresh checkout: checking the next green change, ${who(next)}'s`,
    );
    const truth = await checkGroundTruth({ ...input, winner: next, early: null, truthName: `${input.run.runId}-truth${n}` });
    if (isFixed(next, truth)) return { groundTruth: truth, selection: { ...selection, winner: next } };
  }
  return { groundTruth: first, selection };
}

/**
 * `patch` on a fresh checkout of the base (worktree `name`), tested in a fresh cell and judged
 * against the baseline. `early`: on idle cores only (EarlyWorkDropped when none is, or when
 * it aborts), and judged once the baseline is known.
 */
export async function groundTruthOf(
  { run, deps, cells }: RunScope & { cells: RunCells },
  patch: PatchBytes,
  name: string,
  baseline: Judged | null | Promise<Judged | null>,
  /** Whose change, in progress lines. */
  who: string,
  early?: AbortSignal,
): Promise<GroundTruth> {
  // With the base commit's tests, as its verdict had them (verdictTree.ts).
  const baseTests = await verdictTree(run.repo, run.base, patch);
  const gtWt = await createAttemptWorktree(run.repo, baseTests?.commit ?? run.base, name, {
    include: run.trust.include,
    onSkipped: deps.progress,
  });
  try {
    const applied = baseTests ? { applied: true, conflicts: [] } : await applyPatch(gtWt, patch);
    let verdict: Verdict | null = null;
    if (applied.applied) {
      await purgePythonCaches(gtWt.path);
      try {
        const judged = await cells.judgedTestCell(gtWt.path, 'ground_truth', null, baseline, undefined, early);
        // A cell killed by the cancel says nothing about the patch: the run is cancelled, not "not fixed".
        throwIfCancelled(deps.signal);
        verdict = judged.verdict;
        // The run's ending names the reason; what the cell printed last is most often its cause.
        if (!verdict.green)
          deps.progress(
            `ground truth of ${who}: red (${attemptReason(verdict, null)}); its output ends: ${outputEnding(judged.test.output)}`,
          );
      } catch (e) {
        // The winner's tests left a tree nobody may use: not fixed (no verdict), the tree goes below.
        if (!(e instanceof WorktreeWithheldError)) throw e;
        deps.progress(`ground truth: failed: ${e.message}`);
      }
    }
    return { applied: applied.applied, conflicts: applied.conflicts, verdict };
  } finally {
    await cells.cleanUp(gtWt);
  }
}

/** Fixed: a winner whose diff applied to a fresh checkout and passed there. */
export function isFixed(winner: CandidateGroup | null, groundTruth: FixReport['ground_truth']): boolean {
  return Boolean(winner && groundTruth?.applied && groundTruth.verdict?.green);
}

/** A resumed run: the ground-truth checkouts and branches its killed runner left go first (gc would find them only later). */
export async function removeLeftGroundTruths(run: Pick<PreparedRun, 'repo' | 'runId'>): Promise<void> {
  const dir = attemptsDir(await locateRepository(run.repo));
  const left = existsSync(dir)
    ? readdirSync(dir).filter((name) => /^-truth\d*$/.test(name.slice(run.runId.length)) && name.startsWith(run.runId))
    : [];
  for (const name of left)
    await destroyAttemptWorktree({ repo: run.repo, path: join(dir, name), branch: `forge/attempt/${name}` }).catch(() => undefined);
}
