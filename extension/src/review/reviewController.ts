import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { runInWordsNow, runNameNow } from '../views/humanNames.js';
import { presentApplied, undoApply } from './applyOutcome.js';
import { applyPartOfAttempt } from './applyPart.js';
import { describeApplyOutcome, reviewUriParts } from './reviewUris.js';
import { saveUnsavedBeforeApply } from './unsavedBeforeApply.js';

/**
 * Review of a winning attempt: a multi-file diff (vscode.changes) of read-only virtual
 * documents, with Apply and Discard in the editor title while a review is open.
 */
export class ReviewController {
  private reviewing: string | null = null;
  /** The attempt under review when it is not the winner (Apply in the editor title applies it). */
  private reviewingAttempt: number | undefined;

  constructor(
    private readonly runner: RunnerConnection,
    private readonly state: ForgeState,
  ) {}

  get reviewingRun(): string | null {
    return this.reviewing;
  }

  /** The attempt under review when it is not shown as the winner (Apply This Attempt in the editor title applies it). */
  get reviewedAttempt(): { runId: string; attempt: number } | null {
    return this.reviewing !== null && this.reviewingAttempt !== undefined
      ? { runId: this.reviewing, attempt: this.reviewingAttempt }
      : null;
  }

  /** The run a command acts on: the one under review, else the newest waiting for review. */
  targetRun(runId?: string): string | undefined {
    return runId ?? this.reviewing ?? this.state.reviewableRun?.run_id;
  }

  /** The winner (or the named attempt) as a multi-file diff against the base commit. */
  async open(runId?: string, attempt?: number): Promise<void> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage(
        'Forge: no winning attempt waits for review in this window. Run "Forge: Fix Issue in Cells" first.',
      );
      return;
    }
    const review = await this.runner.request('review/files', { run_id: id, ...(attempt !== undefined ? { attempt } : {}) });
    const uri = (side: 'base' | 'attempt', path: string) =>
      vscode.Uri.from(reviewUriParts({ runId: id, side, path, ...(attempt !== undefined ? { attempt } : {}) }));
    const resources = review.files.map((f) => [vscode.Uri.file(join(review.repo, f.path)), uri('base', f.path), uri('attempt', f.path)]);
    await this.setReviewing(id, attempt);
    const run = this.state.runs.find((r) => r.run_id === id);
    const who = attempt === undefined ? 'winner' : `attempt ${review.attempt}`;
    await vscode.commands.executeCommand('vscode.changes', `Forge: ${who} of ${run ? runNameNow(run) : 'the run'}`, resources);
  }

  /**
   * Two attempts' changes side by side, file by file (the winner left, the attempt right): a
   * file only one of them changed shows that one's change against the base.
   */
  async compareWithWinner(runId: string, attempt: number): Promise<void> {
    const winner = await this.runner.request('review/files', { run_id: runId });
    const other = await this.runner.request('review/files', { run_id: runId, attempt });
    const inWinner = new Set(winner.files.map((f) => f.path));
    const inOther = new Set(other.files.map((f) => f.path));
    const side = (path: string, byWinner: boolean) => {
      const mine = byWinner ? inWinner.has(path) : inOther.has(path);
      // The side that did not change a file shows its base, read through the attempt that did.
      const ref = mine
        ? { runId, side: 'attempt' as const, path, ...(byWinner ? {} : { attempt }) }
        : { runId, side: 'base' as const, path, ...(byWinner ? { attempt } : {}) };
      return vscode.Uri.from(reviewUriParts(ref));
    };
    const paths = [...new Set([...inWinner, ...inOther])].sort();
    const resources = paths.map((p) => [vscode.Uri.file(join(winner.repo, p)), side(p, true), side(p, false)]);
    // The editor title's Apply acts on what the page shows on its right: this attempt (after its question), not the winner.
    await this.setReviewing(runId, attempt);
    await vscode.commands.executeCommand('vscode.changes', `Forge: winner (attempt ${winner.attempt}) vs attempt ${attempt}`, resources);
  }

  async apply(runId?: string, attempt?: number): Promise<boolean> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage('Forge: no winning attempt to apply in this window.');
      return false;
    }
    // A notification shown before the run was applied (from Compare, the view or another
    // toast) still offers Apply: say where the run stands, by its title, instead of failing.
    const { run } = await this.runner.request('runs/show', { run_id: id });
    if (run.review === 'applied' || run.review === 'discarded') {
      const named = runInWordsNow(run);
      void vscode.window.showInformationMessage(
        run.review === 'applied'
          ? `Forge: ${named} is already applied to your working tree; nothing more to apply.`
          : `Forge: ${named} was discarded; its attempts can no longer be applied.`,
      );
      return false;
    }
    if (!(await this.confirmOutsideWorkspace(id))) return false;
    const chosen = attempt;
    if (chosen !== undefined && !(await this.confirmNotWinner(id, chosen))) return false;
    // Apply writes the files on disk: unsaved editors of them are saved first (or nothing is applied).
    const files = () =>
      this.runner
        .request('review/files', { run_id: id, ...(chosen !== undefined ? { attempt: chosen } : {}) })
        .then((f) => f.files.map((x) => x.path));
    if (!(await saveUnsavedBeforeApply(run.repo, files))) return false;
    const r = await this.runner.request('review/apply', {
      run_id: id,
      ...(chosen !== undefined ? { attempt: chosen } : {}),
      merge: true,
      // Left as the user had them, resolved in the merge editor (presentApplied): see applyIntoCheckout.
      conflicts: 'yours',
    });
    const what = chosen === undefined ? 'the winner' : `attempt ${r.attempt}`;
    const message = describeApplyOutcome(r.applied, r.repo, r.files, what, r.branch_removed);
    if (!r.applied) {
      void vscode.window.showErrorMessage(`Forge: ${message}`);
      return false;
    }
    await this.closeReviewEditors();
    await this.setReviewing(null);
    // Merged with the user's edits: conflicts open in the merge editor; Undo Apply is offered.
    await presentApplied(this.runner, id, r, message);
    return true;
  }

  /** Forge: Apply Part of Attempt...: hunks of the node's attempt (else the one under review, else the winner). */
  async applyPart(runId?: string, attempt?: number): Promise<boolean> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage('Forge: no attempt to apply in this window; pick one in the Attempts view.');
      return false;
    }
    const chosen = attempt ?? (id === this.reviewing ? this.reviewingAttempt : undefined);
    return applyPartOfAttempt(
      this.runner,
      { runId: id, ...(chosen !== undefined ? { attempt: chosen } : {}) },
      // A part of an attempt that is not the winner (a red one) is asked about as its whole apply is.
      async (repo, paths, picked) =>
        (await this.confirmOutsideWorkspace(id)) && (await this.confirmNotWinner(id, picked)) && saveUnsavedBeforeApply(repo, paths),
    );
  }

  undoApply(runId?: string): Promise<boolean> {
    return undoApply(this.runner, runId);
  }

  /** Applying an attempt that is not the winner says what its tests said first. */
  private async confirmNotWinner(runId: string, attempt: number): Promise<boolean> {
    const snap = this.state.snapshots.get(runId) ?? (await this.runner.request('runs/show', { run_id: runId }));
    const a = snap.attempts.find((x) => x.index === attempt);
    if (!a || a.winner) return true;
    const tests = a.green ? `Its tests were green (${a.passed} passed)` : `Its tests were red (${a.failed ?? '?'} failing)`;
    const choice = await vscode.window.showWarningMessage(
      `Apply attempt ${attempt} instead of the winner? ${tests}.`,
      { modal: true, detail: 'The winner ranked first for a reason: the run details explain the ranking.' },
      'Apply This Attempt',
    );
    return choice === 'Apply This Attempt';
  }

  async discard(runId?: string, confirm = true): Promise<boolean> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage('Forge: no attempts to discard.');
      return false;
    }
    const run = this.state.runs.find((r) => r.run_id === id);
    const named = run ? runInWordsNow(run) : 'the run';
    const theRun = run?.issue_title.trim() ? 'the run ' : '';
    if (confirm) {
      const pendingWinner = run?.status === 'fixed' && run.review === 'pending' && run.winner_attempt !== null;
      const choice = await vscode.window.showWarningMessage(
        run?.applied_part && run.review === 'pending'
          ? `Discard ${theRun}${named}? Part of attempt ${run.applied_part.attempt} is in your checkout (${run.applied_part.files.join(', ')}) and stays there (Undo Apply takes it back). The run's branches and any worktree left are deleted, and its attempts are no longer offered.`
          : pendingWinner
            ? `Discard ${theRun}${named}? Its winner (attempt ${run.winner_attempt}) was not applied: its branch and any worktree left are deleted, and its attempts are no longer offered.`
            : `Discard ${theRun}${named}? Its attempts are no longer offered for review or apply; any worktree left is deleted.`,
        { modal: true },
        'Discard',
      );
      if (choice !== 'Discard') return false;
    }
    const r = await this.runner.request('review/discard', { run_id: id });
    void vscode.window.showInformationMessage(`Forge: discarded ${theRun}${named}${r.removed.length ? ` (${r.removed.join(', ')})` : ''}.`);
    await this.closeReviewEditors();
    await this.setReviewing(null);
    return true;
  }

  /**
   * Apply writes into the run's repository: when this window does not have it open, the user
   * says so first (a run listed from another repository must not change it unseen).
   */
  private async confirmOutsideWorkspace(runId: string): Promise<boolean> {
    const run = this.state.runs.find((r) => r.run_id === runId) ?? (await this.runner.request('runs/show', { run_id: runId })).run;
    if (this.state.inScope(run)) return true;
    const choice = await vscode.window.showWarningMessage(
      `Apply the winner of ${runInWordsNow(run)} to ${run.repo}? That repository is not open in this window.`,
      { modal: true, detail: 'Apply writes the changed files into its working tree.' },
      'Apply There',
    );
    return choice === 'Apply There';
  }

  private async setReviewing(runId: string | null, attempt?: number): Promise<void> {
    this.reviewing = runId;
    this.reviewingAttempt = attempt;
    await vscode.commands.executeCommand('setContext', 'forge.reviewing', runId !== null);
    await vscode.commands.executeCommand('setContext', 'forge.reviewingAttempt', runId !== null && attempt !== undefined);
  }

  private async closeReviewEditors(): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => {
        const input = t.input as { original?: vscode.Uri; modified?: vscode.Uri; textDiffs?: unknown[] } | undefined;
        return input?.original?.scheme === 'forge-review' || /^Forge: (winner|attempt)/.test(t.label);
      });
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }
}
