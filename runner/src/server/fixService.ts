import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CellScheduler } from '../cells/cellScheduler.js';
import type { CellProvider } from '../cells/provider.js';
import { createProvider, type ProviderOptions } from '../cells/providerRegistry.js';
import type { CellSpecInput } from '../protocol/cellSpec.js';
import type { ProviderName } from '../protocol/cellResult.js';
import { type FixRequest, FixRequestSchema, type FixStartParams } from '../protocol/fixRequest.js';
import { InputError } from '../protocol/inputError.js';
import type { ApplySelection, CellSnapshot, RpcFixNotification, RpcFixResult, RunSnapshot } from '../protocol/rpcFix.js';
import { ClientModel } from '../repair/models/clientModel.js';
import { createModel } from '../repair/models/createModel.js';
import type { RepairModel } from '../repair/models/repairModel.js';
import { prewarmFor, resolveRun, type RunSetup } from '../repair/fix/resolveRun.js';
import { prepareRun, resumeRequest, RunnerStopping, runPreparedFix } from '../repair/runFix.js';
import { openStore } from '../store/openStore.js';
import { RunStore } from '../store/runStore.js';
import { attemptTree } from '../workspace/attemptTree.js';
import { isEmptyPatch, patchFromStore } from '../workspace/patchBytes.js';
import { applyIntoCheckout } from '../workspace/applyIntoCheckout.js';
import { describeUnrestored, readRecord, restoreCheckout, undoRoot, writeRecord } from '../workspace/checkoutUndo.js';
import { appliedPartOf, listCheckoutRecords, listRecords, newerOverlapping } from '../workspace/undoStack.js';
import { wholeChangeIn } from '../workspace/wholeChangeIn.js';
import { listPatchFiles, selectFromPatch } from '../workspace/patchHunks.js';
import { discardRun, listChangedFiles, readReviewContent, winnerBranchName } from '../workspace/reviewWinner.js';
import { processAlive } from '../workspace/staleWorktrees.js';
import { runSnapshot } from './runSnapshots.js';

export interface FixServiceHooks {
  notify: (method: RpcFixNotification, params: unknown) => void;
  /** Asks the client for a model turn (client:vscode-lm). */
  askClientModel: (request: unknown, signal?: AbortSignal) => Promise<unknown>;
  log: (line: string) => void;
}

interface ActiveRun {
  abort: AbortController;
  done: Promise<void>;
}

/**
 * Fix runs of a long-lived runner: starts them in the background, cancels them, tracks the
 * cells running right now, and pushes each change as a notification carrying the run's
 * snapshot from the store (coalesced so a burst of progress is one message).
 */
export class FixService {
  readonly store: RunStore;
  private readonly active = new Map<string, ActiveRun>();
  /** Attempt trees already written (run:index -> tree id): a review reads many files of one. */
  private readonly trees = new Map<string, string>();
  private readonly running = new Map<string, CellSnapshot>();
  /** Run id -> attempt index -> cells ahead of that attempt's cell waiting for the machine. */
  private readonly waiting = new Map<string, Map<number, number>>();
  private readonly pendingPush = new Map<string, NodeJS.Timeout>();
  private cellSeq = 0;
  /** One for every run this runner serves: overlapping runs take turns for the machine's cells. */
  private readonly scheduler: CellScheduler;

  constructor(
    private readonly stateDir: string,
    private readonly hooks: FixServiceHooks,
    /** How a run gets its cells (tests pass the in-process fake provider). */
    private readonly makeProvider: (name: string, options: ProviderOptions) => CellProvider = createProvider,
  ) {
    this.store = new RunStore(openStore(join(stateDir, 'forge.db')));
    this.scheduler = new CellScheduler(this.store.cellSlots());
  }

  /** Resolves with the run id once the run is recorded; bad input rejects with nothing recorded. */
  async start(p: FixStartParams): Promise<{ run_id: string }> {
    // The CLI's rule (resolveRun): the user's bake record counts here too. Swarm cells take
    // their manager and registry from the runner's environment (DOCKER_HOST, FORGE_SWARM_REGISTRY).
    const setup = await resolveRun(
      p.repo,
      { provider: p.provider, image: p.image, attempts: p.attempts, howToGiveImage: 'set forge.image (or run forge-runner bake)' },
      (line) => this.hooks.log(line),
    );
    const { image: _asked, ...params } = p;
    return this.launch(
      FixRequestSchema.parse({ ...params, provider: setup.provider, ...(setup.image ? { image: setup.image } : {}) }),
      setup,
    );
  }

  /**
   * Continues a cancelled or interrupted run here, as `fix --resume` does, with what the store
   * recorded of it. A run this runner is still stopping is waited for first, so Resume right
   * after Cancel works; one it is still running is refused.
   */
  async resume(runId: string): Promise<{ run_id: string }> {
    const current = this.active.get(runId);
    if (current && !current.abort.signal.aborted) throw new InputError(`run ${runId} is in progress in this runner; nothing to resume`);
    if (current) await current.done;
    const row = this.store.getRun(runId);
    if (!row) throw new InputError(`no run ${runId}; see runs/list`);
    const request = FixRequestSchema.parse(resumeRequest(row));
    return this.launch(request, { provider: row.provider as ProviderName, image: request.image, prewarm: prewarmFor(request.attempts) });
  }

  /** Records (or resumes) the run, then runs it in the background; resolves with its id. */
  private async launch(request: FixRequest, setup: RunSetup): Promise<{ run_id: string }> {
    const model = this.createModel(request.model);
    const provider = this.observe(this.makeProvider(setup.provider, { prewarm: setup.prewarm }));
    const abort = new AbortController();
    // The run is recorded (or refused) here, in this service's own store: the id is known
    // before anything runs, so no progress line is lost and nothing races to learn it.
    const run = await prepareRun(request, { store: this.store, provider, model });
    const id = run.runId;
    const done = runPreparedFix(run, request, {
      store: this.store,
      provider,
      model,
      signal: abort.signal,
      scheduler: this.scheduler,
      progress: (line) => {
        this.hooks.notify('fix/progress', { run_id: id, line });
        this.schedulePush(id);
      },
      cellWait: ({ attemptIdx }, ahead) => {
        if (attemptIdx === null) return;
        const run = this.waiting.get(id) ?? new Map<number, number>();
        if (ahead === null) run.delete(attemptIdx);
        else run.set(attemptIdx, ahead);
        if (run.size > 0) this.waiting.set(id, run);
        else this.waiting.delete(id);
        this.schedulePush(id);
      },
    })
      .then(
        () => null,
        (e: Error) => e,
      )
      .then((error) => {
        this.active.delete(id);
        this.waiting.delete(id);
        this.flushPush(id);
        const status = this.store.getRun(id)?.status ?? 'failed';
        const message = error ? (abort.signal.aborted ? 'cancelled' : (error.message.split('\n')[0] ?? 'error')) : null;
        if (error && !abort.signal.aborted && !(error instanceof InputError))
          this.hooks.log(`run ${id} failed: ${error.stack ?? error.message}`);
        this.hooks.notify('fix/finished', { run_id: id, status, error: message });
      });
    this.active.set(id, { abort, done });
    this.schedulePush(id);
    return { run_id: id };
  }

  cancel(runId: string): boolean {
    const run = this.active.get(runId);
    if (!run) return false;
    run.abort.abort();
    return true;
  }

  snapshot(runId: string): RunSnapshot | null {
    return runSnapshot(this.store, runId, [...this.running.values()], processAlive, this.waiting.get(runId));
  }

  /** A run this runner is running (or still stopping). */
  isActive(runId: string): boolean {
    return this.active.has(runId);
  }

  /** Tells clients a run changed outside this service (runs/discardOld marked it discarded). */
  announce(runId: string): void {
    this.pushNow(runId);
  }

  runningCells(): CellSnapshot[] {
    return [...this.running.values()];
  }

  async reviewFiles(runId: string, attempt?: number): Promise<RpcFixResult<'review/files'>> {
    const t = await this.reviewTarget(runId, attempt);
    return {
      run_id: runId,
      attempt: t.index,
      repo: t.run.repo,
      base_commit: t.run.base_commit,
      files: await listChangedFiles(t.run.repo, t.run.base_commit, t.tree),
    };
  }

  async reviewContent(runId: string, path: string, side: 'base' | 'attempt', attempt?: number): Promise<RpcFixResult<'review/content'>> {
    const t = await this.reviewTarget(runId, attempt);
    // Only files the attempt changed can be read: a review request is not a way to read the repo.
    const files = await listChangedFiles(t.run.repo, t.run.base_commit, t.tree);
    if (!files.some((f) => f.path === path))
      throw new InputError(`${path} is not one of the files attempt ${t.index} of run ${runId} changed; see review/files`);
    return readReviewContent(t.run.repo, side === 'base' ? t.run.base_commit : t.tree, path);
  }

  /** Files and hunks of an attempt's change, with the ids review/apply's selection names. */
  async reviewHunks(runId: string, attempt?: number): Promise<RpcFixResult<'review/hunks'>> {
    const t = await this.reviewTarget(runId, attempt);
    const files = listPatchFiles(t.patch).map((f) => ({
      ...f,
      hunks: f.hunks.map(({ oldStart, newStart, newCount, firstChange, ...h }) => ({
        ...h,
        old_start: oldStart,
        new_start: newStart,
        new_count: newCount,
        first_change: firstChange,
      })),
    }));
    return { run_id: runId, attempt: t.index, repo: t.run.repo, files };
  }

  /**
   * The attempt's change (or the chosen part of it) into the user's checkout, all or nothing.
   * Only a whole apply marks the run applied and removes its winner branch: after a part the
   * user may come back for the rest. With `merge`, a checkout that changed gets a 3-way merge
   * (see applyIntoCheckout) and review/undoApply puts back what it held.
   */
  async apply(
    runId: string,
    attempt?: number,
    selection?: ApplySelection,
    merge = false,
    conflicts: 'markers' | 'yours' = 'markers',
  ): Promise<RpcFixResult<'review/apply'>> {
    const t = await this.reviewTarget(runId, attempt);
    if (t.run.review === 'applied') throw new InputError(`run ${runId} was already applied to ${t.run.repo}`);
    let patch = t.patch;
    let leftOut: string[] = [];
    if (selection) {
      if (!selection.files?.length && !selection.hunks?.length)
        throw new InputError('the selection chooses nothing: name files or hunks from review/hunks, or leave selection out to apply all');
      const chosen = (() => {
        try {
          return selectFromPatch(t.patch, selection);
        } catch (e) {
          throw new InputError((e as Error).message);
        }
      })();
      patch = chosen.patch;
      leftOut = chosen.leftOut;
    }
    const partial = leftOut.length > 0;
    const outcome = await applyIntoCheckout({
      repo: t.run.repo,
      runId,
      attempt: t.index,
      baseCommit: t.run.base_commit,
      theirsTree: partial ? await attemptTree(t.run.repo, t.run.base_commit, patch) : t.tree,
      patch,
      undoRoot: undoRoot(this.stateDir, runId),
      merge,
      conflicts,
    });
    let branchRemoved: string | null = null;
    // A whole change merged with your edits is applied, conflicts kept as yours or not: the merge
    // editor (or the markers) is where the user takes the attempt's lines instead.
    // Parts applied one after another that add up to the whole change count as the whole.
    const complete = !partial || (outcome.applied && (await wholeChangeIn(t.run.repo, t.patch)));
    // Every part still in (an earlier part's files too), from the applies not undone.
    if (outcome.applied && !complete) this.store.setAppliedPart(runId, appliedPartOf(listRecords(undoRoot(this.stateDir, runId))));
    if (outcome.applied && complete) {
      this.store.setReview(runId, 'applied', t.index);
      this.store.setAppliedPart(runId, null);
      if (outcome.undo) writeRecord(undoRoot(this.stateDir, runId), { ...outcome.undo, marked_applied: true });
      // The change is in the working tree now; the winner branch (and any worktree left) would only repeat it.
      if (t.run.winner_attempt !== null) {
        const branch = winnerBranchName(runId, t.run.winner_attempt);
        const removed = await discardRun(t.run.repo, runId, branch).catch((e: Error) => {
          this.hooks.log(`run ${runId}: applied, but removing ${branch} failed: ${e.message}`);
          return [] as string[];
        });
        if (removed.includes(`branch ${branch}`)) branchRemoved = branch;
      }
    }
    if (outcome.applied) this.pushNow(runId);
    return {
      applied: outcome.applied,
      attempt: t.index,
      repo: t.run.repo,
      files: outcome.files,
      branch_removed: branchRemoved,
      mode: outcome.mode,
      conflicts: outcome.conflicts,
      // Nothing of the attempt is left out of the checkout once its parts add up to the whole.
      left_out: complete ? [] : leftOut,
      undo_id: outcome.undo?.id ?? null,
    };
  }

  /** Puts back exactly what the checkout held before the run's newest apply (or the one named). */
  async undoApply(runId: string, undoId?: string): Promise<RpcFixResult<'review/undoApply'>> {
    const run = this.store.getRun(runId);
    if (!run) throw new InputError(`no run ${runId}; see runs/list`);
    const root = undoRoot(this.stateDir, runId);
    const record = (() => {
      try {
        return readRecord(root, undoId);
      } catch (e) {
        throw new InputError((e as Error).message);
      }
    })();
    if (!record) throw new InputError(`nothing to undo for run ${runId}: no apply of it is remembered${undoId ? ` as ${undoId}` : ''}`);
    // Any run's newer apply into the same files: undone first.
    const over = newerOverlapping(listCheckoutRecords(dirname(root), record.top), record);
    if (over.length > 0)
      throw new InputError(
        `a newer apply of run ${over[0]!.run_id} (undo id ${over[0]!.id}) wrote ${over[0]!.files.map((f) => f.path).join(', ')} since: undo it first, then this one (undo id ${record.id})`,
      );
    const { restored, failed } = restoreCheckout(record);
    if (record.marked_applied && run.review === 'applied') this.store.setReview(runId, 'pending');
    if (failed.length > 0) {
      // The record keeps only what is still to restore: undo again once the obstacle is gone.
      const left = new Set(failed.map((f) => f.path));
      writeRecord(root, { ...record, marked_applied: false, files: record.files.filter((f) => left.has(f.path)) });
      // The files left hold the apply still: the run (pending again) says so, as after a part.
      this.store.setAppliedPart(runId, appliedPartOf(listRecords(root)));
      this.pushNow(runId);
      throw new Error(
        `undo restored ${restored.length} file(s) but could not restore ${failed.length}: ${describeUnrestored(failed)}; fix that and undo again (undo id ${record.id})`,
      );
    }
    rmSync(join(root, record.id), { recursive: true, force: true });
    // What of the run the checkout still holds: every apply left to undo, when it was a part; the
    // newest of them is the one the client offers Undo Apply for.
    const left = listRecords(root);
    this.store.setAppliedPart(runId, appliedPartOf(left));
    const rest = left[0] ?? null;
    this.pushNow(runId);
    return {
      restored,
      review: this.store.getRun(runId)?.review ?? null,
      still_applied: rest ? { undo_id: rest.id, attempt: rest.attempt, files: rest.files.map((f) => f.path) } : null,
    };
  }

  async discard(runId: string): Promise<RpcFixResult<'review/discard'>> {
    const run = this.store.getRun(runId);
    if (!run) throw new InputError(`no run ${runId}; see runs/list`);
    if (this.active.has(runId)) throw new InputError(`run ${runId} is still in progress; cancel it first`);
    const branch = run.winner_attempt === null ? null : winnerBranchName(runId, run.winner_attempt);
    const removed = await discardRun(run.repo, runId, branch);
    if (run.status === 'fixed' && run.review !== 'applied') this.store.setReview(runId, 'discarded');
    this.pushNow(runId);
    return { removed };
  }

  /**
   * Stops every run in progress and waits for them (their cells are killed): the runner is
   * going away (the window closed), so they are interrupted, not cancelled, and Resume goes on.
   */
  async close(): Promise<void> {
    for (const r of this.active.values()) r.abort.abort(new RunnerStopping());
    await Promise.all([...this.active.values()].map((r) => r.done));
    for (const t of this.pendingPush.values()) clearTimeout(t);
  }

  /**
   * The attempt a review method acts on (the winner unless one is named) and the tree its
   * stored patch makes of the base commit: any finished attempt can be reviewed and applied,
   * from the store, whether or not its branch or worktree still exists.
   */
  private async reviewTarget(runId: string, attempt?: number) {
    const run = this.store.getRun(runId);
    if (!run) throw new InputError(`no run ${runId}; see runs/list`);
    if (this.active.has(runId)) throw new InputError(`run ${runId} is still in progress; review its attempts once it ends`);
    if (run.review === 'discarded') throw new InputError(`run ${runId} was discarded; its attempts are no longer offered`);
    let index = attempt;
    if (index === undefined) {
      if (run.status !== 'fixed' || run.winner_attempt === null)
        throw new InputError(`run ${runId} has no winner to review (status ${run.status}); name one of its attempts`);
      index = run.winner_attempt;
    }
    const row = this.store.attempts(runId).find((a) => a.idx === index);
    if (!row) throw new InputError(`run ${runId} has no attempt ${index}; see runs/show`);
    if (row.status !== 'finished')
      throw new InputError(`attempt ${index} of run ${runId} did not finish (${row.status}): it has no change`);
    const patch = patchFromStore(row.patch);
    if (isEmptyPatch(patch)) throw new InputError(`attempt ${index} of run ${runId} changed nothing`);
    const key = `${runId}:${index}`;
    let tree = this.trees.get(key);
    if (!tree) {
      tree = await attemptTree(run.repo, run.base_commit, patch);
      this.trees.set(key, tree);
    }
    return { run, index, patch, tree };
  }

  private createModel(spec: string): RepairModel {
    if (spec === 'client:vscode-lm') return new ClientModel(spec, this.hooks.askClientModel);
    if (spec.startsWith('client:')) throw new InputError(`unknown client model "${spec}"; the only client model is client:vscode-lm`);
    return createModel(spec);
  }

  /** Wraps a provider so the cells it is running show up (and leave) as they happen. */
  private observe(provider: CellProvider): CellProvider {
    const run = async (spec: CellSpecInput, options?: Parameters<CellProvider['run']>[1]) => {
      const key = `running:${++this.cellSeq}`;
      const labels = spec.labels ?? {};
      const runId = labels['forge.run'] ?? '';
      const attempt = labels['forge.attempt'];
      const cmd = spec.cmd;
      this.running.set(key, {
        cell_id: key,
        run_id: runId,
        attempt_index: attempt === undefined ? null : Number(attempt),
        purpose: labels['forge.purpose'] ?? 'cell',
        provider: provider.name,
        image: spec.image ?? '',
        command: Array.isArray(cmd) ? cmd.join(' ') : String(cmd),
        running: true,
        exit_code: null,
        killed_by: null,
        duration_ms: null,
        started_at: new Date().toISOString(),
      });
      this.cellsChanged(runId);
      try {
        return await provider.run(spec, options);
      } finally {
        this.running.delete(key);
        this.cellsChanged(runId);
      }
    };
    return { name: provider.name, health: () => provider.health(), drain: () => provider.drain(), run };
  }

  private cellsChanged(runId: string): void {
    this.hooks.notify('cells/changed', { running: this.runningCells() });
    if (runId) this.schedulePush(runId);
  }

  private schedulePush(runId: string): void {
    if (this.pendingPush.has(runId)) return;
    this.pendingPush.set(
      runId,
      setTimeout(() => this.flushPush(runId), 100),
    );
  }

  private flushPush(runId: string): void {
    const t = this.pendingPush.get(runId);
    if (t) clearTimeout(t);
    this.pendingPush.delete(runId);
    this.pushNow(runId);
  }

  private pushNow(runId: string): void {
    const snap = this.snapshot(runId);
    if (snap) this.hooks.notify('runs/changed', snap);
  }
}
