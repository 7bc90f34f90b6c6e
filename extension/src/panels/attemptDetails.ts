import * as vscode from 'vscode';
import type { RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { cellPurposeWords, runNameNow } from '../views/humanNames.js';
import type { AttemptsNode } from '../views/attemptsView.js';
import { ATTEMPT_ACTION_COMMANDS, attemptActionStates, pageAction } from './attemptActions.js';
import { DetailsPanel } from './detailsPanel.js';

/** Attempt details panels: one per run and attempt, its finished cells' logs included, refreshed while open. */
export class AttemptDetails {
  constructor(private readonly deps: { runner: RunnerConnection; extensionUri: vscode.Uri }) {}

  async show(runId: string, index: number): Promise<void> {
    const { runner, extensionUri } = this.deps;
    const details = await runner.request('attempts/details', { run_id: runId, index });
    const cells = await Promise.all(
      details.cells.map(async (c) => {
        const named = { ...c, purpose_words: cellPurposeWords(c.purpose) };
        return c.running ? named : { ...named, log: (await runner.request('cells/log', { run_id: runId, cell_id: c.cell_id })).log };
      }),
    );
    DetailsPanel.show(
      extensionUri,
      `attempt:${runId}:${index}`,
      `Attempt ${index} · ${runNameNow(details.run)}`,
      { kind: 'attempt', data: { ...details, cells }, actions: attemptActionStates(details) },
      (m) =>
        void this.act(runId, index, m).catch((e: unknown) =>
          vscode.window.showErrorMessage(`Forge: ${e instanceof Error ? e.message : String(e)}`),
        ),
    );
  }

  /**
   * A button of the page: checked against the attempt as it is now (the page may be stale or
   * forged), then the Attempts view's command for this panel's own run and attempt.
   */
  private async act(runId: string, index: number, message: unknown): Promise<void> {
    const details = await this.deps.runner.request('attempts/details', { run_id: runId, index });
    const action = pageAction(message, attemptActionStates(details));
    if (!action) return;
    const node: AttemptsNode = { kind: 'attempt', runId, attempt: details.attempt };
    await vscode.commands.executeCommand(ATTEMPT_ACTION_COMMANDS[action], node);
  }

  /** A run changed: the open panels of its attempts show the new state. */
  refreshOpen(snap: RunSnapshot): void {
    for (const a of snap.attempts) {
      if (DetailsPanel.isOpen(`attempt:${snap.run.run_id}:${a.index}`)) void this.show(snap.run.run_id, a.index);
    }
  }
}
