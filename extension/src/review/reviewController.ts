import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ForgeState } from '../forgeState.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { describeApplyOutcome, reviewUriParts } from './reviewUris.js';

/**
 * Review of a winning attempt: a multi-file diff (vscode.changes) of read-only virtual
 * documents, with Apply and Discard in the editor title while a review is open.
 */
export class ReviewController {
  private reviewing: string | null = null;

  constructor(
    private readonly runner: RunnerConnection,
    private readonly state: ForgeState,
  ) {}

  get reviewingRun(): string | null {
    return this.reviewing;
  }

  /** The run a command acts on: the one under review, else the newest waiting for review. */
  targetRun(runId?: string): string | undefined {
    return runId ?? this.reviewing ?? this.state.reviewableRun?.run_id;
  }

  async open(runId?: string): Promise<void> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage('Forge: no winning attempt waits for review. Run "Forge: Fix Issue in Cells" first.');
      return;
    }
    const review = await this.runner.request('review/files', { run_id: id });
    const uri = (side: 'base' | 'attempt', path: string) => vscode.Uri.from(reviewUriParts({ runId: id, side, path }));
    const resources = review.files.map((f) => [vscode.Uri.file(join(review.repo, f.path)), uri('base', f.path), uri('attempt', f.path)]);
    await this.setReviewing(id);
    const run = this.state.runs.find((r) => r.run_id === id);
    await vscode.commands.executeCommand('vscode.changes', `Forge: winner of ${run?.issue_title || id}`, resources);
  }

  async apply(runId?: string): Promise<boolean> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage('Forge: no winning attempt to apply.');
      return false;
    }
    if (!(await this.confirmOutsideWorkspace(id))) return false;
    const r = await this.runner.request('review/apply', { run_id: id });
    const message = describeApplyOutcome(r.applied, r.repo, r.files);
    if (!r.applied) {
      void vscode.window.showErrorMessage(`Forge: ${message}`);
      return false;
    }
    void vscode.window.showInformationMessage(`Forge: ${message}`);
    await this.closeReviewEditors();
    await this.setReviewing(null);
    return true;
  }

  async discard(runId?: string, confirm = true): Promise<boolean> {
    const id = this.targetRun(runId);
    if (!id) {
      void vscode.window.showInformationMessage('Forge: no attempts to discard.');
      return false;
    }
    if (confirm) {
      const choice = await vscode.window.showWarningMessage(
        `Discard the attempts of run ${id}? The winner branch and any attempt worktrees are deleted.`,
        { modal: true },
        'Discard',
      );
      if (choice !== 'Discard') return false;
    }
    const r = await this.runner.request('review/discard', { run_id: id });
    void vscode.window.showInformationMessage(`Forge: discarded run ${id}${r.removed.length ? ` (${r.removed.join(', ')})` : ''}.`);
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
      `Apply the winner of run ${runId} to ${run.repo}? That repository is not open in this window.`,
      { modal: true, detail: 'Apply writes the changed files into its working tree.' },
      'Apply There',
    );
    return choice === 'Apply There';
  }

  private async setReviewing(runId: string | null): Promise<void> {
    this.reviewing = runId;
    await vscode.commands.executeCommand('setContext', 'forge.reviewing', runId !== null);
  }

  private async closeReviewEditors(): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => {
        const input = t.input as { original?: vscode.Uri; modified?: vscode.Uri; textDiffs?: unknown[] } | undefined;
        return input?.original?.scheme === 'forge-review' || t.label.startsWith('Forge: winner');
      });
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }
}
