import { createHash } from 'node:crypto';
import type { PatchBytes } from '../../workspace/patchBytes.js';
import type { Verdict } from '../verdicts/judgeTestRun.js';
import type { TestRun } from './runCells.js';

/*
 * Never run the same tree twice. Within one run the test command, image, environment and
 * shared dependencies are fixed, so a test run is named by the tree it ran on: the attempt's
 * change as a patch over the base commit (what review, apply and ground truth carry). A patch
 * that leaves something out (too large, not a regular file) or could not be captured names no
 * tree: such runs are never reused.
 */

/** Pure: the key of the tree a captured change describes, or null when the capture does not name the whole tree. */
export function treeKey(captured: { patch: PatchBytes; omitted: readonly unknown[]; incomplete: string | null }): string | null {
  if (captured.incomplete !== null || captured.omitted.length > 0) return null;
  return createHash('sha256').update(captured.patch).digest('hex');
}

/** Pure: whether a test run may stand for a verdict (a run cut short by the runner says nothing about the tree). */
export function reusableRun(t: TestRun): boolean {
  return !t.result.timed_out && t.result.killed_by === null;
}

/**
 * One attempt's run_tests, remembered with the tree each ran on. The patch does not show
 * everything a test can read (files the base ignores, a submodule path's contents), so any
 * write after a run (a file tool's, a command's) forgets it, whatever the patch says then.
 */
export class AttemptTestRuns {
  private last: { key: string; turn: number; test: TestRun } | null = null;
  /** What the attempt's latest run_tests printed, whatever was written since: a hint, never a verdict (failingFirstVerdict). */
  latestOutput: string | null = null;
  private readonly written = new Set<string>();
  /** Cells run in the worktree (run_tests and run_command): what they leave in ignored paths stays there. */
  private cells = 0;

  /** After write_file or edit_file wrote `rel`. */
  fileWritten(rel: string): void {
    this.last = null;
    this.written.add(rel);
  }

  /** After a run_command: it may have written anything, shown by the patch or not. */
  commandRan(): void {
    this.last = null;
    this.cells++;
  }

  /**
   * Whether the attempt's worktree is exactly the base checkout plus its patch (`paths`, the
   * files the patch changes): no cell ran in it yet (a test run can leave a build or a cache
   * in an ignored path that a later run reads: red team) and every file it wrote is in the
   * patch (an ignored file would not be). Only such worktrees share a verdict: the same patch
   * then means the same tree.
   */
  onlyItsPatch(paths: readonly string[]): boolean {
    const inPatch = new Set(paths);
    return this.cells === 0 && [...this.written].every((rel) => inPatch.has(rel));
  }

  /** Runs the tests (`test`) on the tree `key` names (null: unknown), and remembers the run; `turn` as the store counts it (from 0). */
  async run(turn: number, key: () => Promise<string | null>, test: () => Promise<TestRun>): Promise<TestRun> {
    const k = await key().catch(() => null);
    this.cells++;
    const t = await test();
    this.latestOutput = t.output;
    this.last = k !== null && reusableRun(t) ? { key: k, turn, test: t } : null;
    return t;
  }

  /** The last run_tests when it ran on exactly the tree `key` names. */
  sameTree(key: string | null): { turn: number; test: TestRun } | null {
    return key !== null && this.last?.key === key ? this.last : null;
  }
}

/** Pure: how a verdict taken from attempt `attempt` (the same change) says where it came from. */
export function sharedVerdictFrom(attempt: number): string {
  return `attempt ${attempt}'s verdict (the same change)`;
}

/** Pure: the attempt whose verdict cells a verdict reused from another attempt came from, or null. */
export function sharedVerdictSource(reusedFrom: string | null): number | null {
  const m = /^attempt (\d+)'s verdict \(the same change\)$/.exec(reusedFrom ?? '');
  return m ? Number(m[1]) : null;
}

/** A verdict the run already has, shared by attempts whose change is the same. */
export interface SharedVerdict {
  verdict: Verdict;
  attempt: number;
}

/**
 * The verdicts of one run by tree: the first attempt to reach a tree judges it, the others
 * with the same change wait for that verdict and take it. A verdict that could not run is
 * not shared (the next attempt tries for itself).
 */
export class RunVerdicts {
  private readonly byTree = new Map<string, Promise<SharedVerdict | null>>();

  /**
   * The verdict of `key`'s tree: `own`'s when the attempt already ran its tests on this tree
   * (nothing to wait for), else another attempt's when it has one (or is judging it), else
   * `judge`'s; what this attempt judged is offered to the others. `key` null: judged here.
   */
  async judge(
    key: string | null,
    attempt: number,
    judge: () => Promise<Verdict>,
    own?: () => Promise<Verdict>,
    /** False when the attempt's worktree holds more than its patch: it neither takes nor offers a verdict. */
    shareable = true,
  ): Promise<Verdict> {
    if (key === null || !shareable) return (own ?? judge)();
    const earlier = own ? undefined : this.byTree.get(key);
    if (earlier) {
      const shared = await earlier;
      if (shared && shared.attempt !== attempt) return { ...shared.verdict, reused_from: sharedVerdictFrom(shared.attempt) };
    }
    let offer!: (v: SharedVerdict | null) => void;
    this.byTree.set(key, new Promise((resolve) => (offer = resolve)));
    try {
      const verdict = await (own ?? judge)();
      offer(verdict.could_not_run ? null : { verdict, attempt });
      return verdict;
    } catch (e) {
      offer(null);
      throw e;
    }
  }
}
