import { createHash } from 'node:crypto';
import type { Judged } from '../verdicts/failingSet.js';
import type { PatchBytes } from '../../workspace/patchBytes.js';
import type { RunScope } from './fixRun.js';
import { type EarlyStarted, type GroundTruth, groundTruthOf } from './groundTruth.js';
import { EarlyWorkDropped, type RunCells, runEnd, type TestRun } from './runCells.js';
import { judgeTestRun } from '../verdicts/judgeTestRun.js';
import { isNpmTestCommand } from '../verdicts/npmLifecycle.js';

interface Started {
  patch: PatchBytes;
  stop: AbortController;
  /** null: it gave its core away, or failed: the ground truth runs again after selection. */
  result: Promise<GroundTruth | null>;
}

/*
 * Ground truth started early. The winner's ground truth (its patch on a fresh checkout, in a
 * fresh cell) comes after selection, and selection after the last attempt: when the winner
 * is the last to finish, its own tests and then its ground truth ran one after the other
 * while the rest of the machine idled. So once the baseline is known, an attempt that runs
 * its tests on a change starts the ground truth of that change beside them on the first idle
 * core; tests that fail (judged against the baseline, as its verdict will be) stop it, tests
 * that pass start it if it has not started. It gives its core back to any
 * cell of the run that has to wait for one (then it waits for the next idle core). It is the
 * same computation, judged the same way (a fresh checkout of exactly the winner's patch
 * bytes); only its start moves. A change the winner does not end with (a later edit, a red
 * verdict, another winner) stops it.
 */
export class EarlyGroundTruths implements EarlyStarted {
  private readonly byAttempt = new Map<number, Started>();
  /** Changes whose tests ran, waiting for an idle core, by attempt. */
  private readonly waiting = new Map<number, PatchBytes>();
  private readonly all = new Set<Promise<GroundTruth | null>>();
  private readonly said = new Set<string>();
  private made = 0;
  /** Selection is made (take) or the run ends (settle): nothing starts any more. */
  private closed = false;

  constructor(
    private readonly scope: RunScope & { cells: RunCells },
    private readonly baseline: Promise<Judged | null>,
  ) {
    scope.cells.onContention = () => this.giveWay();
    scope.cells.onCellEnded = () => this.startWaiting();
    baseline.then(
      () => (this.baselineKnown = true),
      () => undefined,
    );
  }

  private baselineKnown = false;

  /** Attempt `index` starts its tests on the tree `patch` makes: once the baseline is known, that tree's ground truth may start beside them. */
  testsStarted(index: number, patch: PatchBytes): void {
    if (this.has(index, patch)) return;
    this.drop(index);
    // Before the baseline is known the attempts' own cells need the cores, and most runs then are red.
    if (!this.baselineKnown) return;
    this.wait(index, patch);
  }

  /** Attempt `index`'s tests (`test`) on that tree ended: red stops its ground truth, green starts it on the first idle core. */
  testsEnded(index: number, patch: PatchBytes, test: TestRun): void {
    if (!this.has(index, patch)) this.drop(index);
    const generation = this.generation.get(index) ?? 0;
    void this.baseline.then(
      (baseline) => {
        // Written to since, or ended: that tree is not the attempt's any more.
        if ((this.generation.get(index) ?? 0) !== generation) return;
        const npmHooks = isNpmTestCommand(this.scope.run.testCmd);
        const verdict = judgeTestRun(test.result.exit_code, test.output, baseline, test.written, { npmHooks, end: runEnd(test) });
        if (!verdict.green) this.drop(index);
        else if (!this.has(index, patch)) this.wait(index, patch);
      },
      () => undefined,
    );
  }

  private has(index: number, patch: PatchBytes): boolean {
    return Boolean(this.byAttempt.get(index)?.patch.equals(patch) || this.waiting.get(index)?.equals(patch));
  }

  private wait(index: number, patch: PatchBytes): void {
    if (this.closed || patch.length === 0 || this.scope.deps.signal?.aborted) return;
    this.waiting.set(index, patch);
    this.startWaiting();
  }

  /** Changes of each attempt: an offer judged after its attempt changed again is stale. */
  private readonly generation = new Map<number, number>();

  /** Attempt `index` changed its tree, or ended on something that will not win: its early ground truth stops. */
  drop(index: number): void {
    this.generation.set(index, (this.generation.get(index) ?? 0) + 1);
    this.waiting.delete(index);
    this.byAttempt.get(index)?.stop.abort();
    this.byAttempt.delete(index);
  }

  /** The ground truth of exactly `patch`, when one started early (every other one stops); null when none did. */
  take(patch: PatchBytes): Promise<GroundTruth | null> | null {
    this.closed = true;
    this.waiting.clear();
    let found: Started | null = null;
    for (const [index, s] of this.byAttempt) {
      if (!found && s.patch.equals(patch)) found = s;
      else this.drop(index);
    }
    return found?.result ?? null;
  }

  /** Stops every early ground truth still running and waits until their cells and checkouts are gone. */
  async settle(): Promise<void> {
    this.closed = true;
    this.waiting.clear();
    for (const index of [...this.byAttempt.keys()]) this.drop(index);
    await Promise.all(this.all);
  }

  private startWaiting(): void {
    for (const [index, patch] of this.waiting) {
      if (this.scope.deps.signal?.aborted || !this.scope.cells.idleCoreNow()) return;
      this.waiting.delete(index);
      this.start(index, patch);
    }
  }

  private start(index: number, patch: PatchBytes): void {
    const stop = new AbortController();
    const name = `${this.scope.run.runId}-truth${++this.made}`;
    const started: Started = { patch, stop, result: Promise.resolve(null) };
    started.result = groundTruthOf(this.scope, patch, name, this.baseline, `attempt ${index}'s change (started early)`, stop.signal).catch(
      (e: unknown) => {
        // No idle core after all, or it gave its core away: it waits for the next one.
        if (e instanceof EarlyWorkDropped && this.byAttempt.get(index) === started) {
          this.byAttempt.delete(index);
          // After selection the winner's ground truth runs in the foreground instead (checkGroundTruth).
          if (!this.closed && !this.scope.deps.signal?.aborted) this.waiting.set(index, patch);
        }
        return null;
      },
    );
    this.all.add(started.result);
    this.byAttempt.set(index, started);
    const key = `${index}:${createHash('sha256').update(patch).digest('hex')}`;
    if (!this.said.has(key)) {
      this.said.add(key);
      this.scope.deps.progress(`attempt ${index}: the ground truth of its change starts early, on an idle core`);
    }
  }

  /** A cell of the run waits for a core: the early ground truth started last gives its own back. */
  private giveWay(): void {
    const newest = [...this.byAttempt.entries()].pop();
    if (!newest) return;
    const [index, started] = newest;
    started.stop.abort();
    this.byAttempt.delete(index);
    if (!this.closed) this.waiting.set(index, started.patch);
  }
}
