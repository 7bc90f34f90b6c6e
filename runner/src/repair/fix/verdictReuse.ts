import { createHash } from 'node:crypto';
import { type PatchBytes, patchStructure } from '../../workspace/patchBytes.js';
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
 * Pure: whether the patch carries a change of `rel` (a `diff --git` header naming it as it
 * is; a name git had to quote is not found, which only costs a reuse).
 */
export function patchTouches(patch: PatchBytes, rel: string): boolean {
  const name = Buffer.from(rel).toString('latin1');
  return patchStructure(patch)
    .split('\n')
    .some((line) => line.startsWith('diff --git ') && (line.endsWith(` b/${name}`) || line.startsWith(`diff --git a/${name} b/`)));
}

/**
 * One attempt's run_tests, remembered with the tree each ran on. The patch does not show
 * everything a test can read (files the base ignores, a submodule path's contents), so any
 * write after a run (a file tool's, a command's) forgets it, whatever the patch says then.
 */
export class AttemptTestRuns {
  private last: { key: string; turn: number; test: TestRun } | null = null;
  private readonly written = new Set<string>();
  private commands = 0;

  /** After write_file or edit_file wrote `rel`. */
  fileWritten(rel: string): void {
    this.last = null;
    this.written.add(rel);
  }

  /** After a run_command: it may have written anything, shown by the patch or not. */
  commandRan(): void {
    this.last = null;
    this.commands++;
  }

  /**
   * Whether the attempt's worktree is the base checkout plus `patch` and what its tests wrote:
   * no command ran and every file it wrote is in the patch (a file the patch does not show,
   * an ignored one say, would make its tests differ from another attempt's with the same patch).
   */
  onlyItsPatch(patch: PatchBytes): boolean {
    return this.commands === 0 && [...this.written].every((rel) => patchTouches(patch, rel));
  }

  /** Runs the tests (`test`) on the tree `key` names (null: unknown), and remembers the run; `turn` as the store counts it (from 0). */
  async run(turn: number, key: () => Promise<string | null>, test: () => Promise<TestRun>): Promise<TestRun> {
    const k = await key().catch(() => null);
    const t = await test();
    this.last = k !== null && reusableRun(t) ? { key: k, turn, test: t } : null;
    return t;
  }

  /** The last run_tests when it ran on exactly the tree `key` names. */
  sameTree(key: string | null): { turn: number; test: TestRun } | null {
    return key !== null && this.last?.key === key ? this.last : null;
  }
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
      if (shared && shared.attempt !== attempt)
        return { ...shared.verdict, reused_from: `attempt ${shared.attempt}'s verdict (the same change)` };
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
