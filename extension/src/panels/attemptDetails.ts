import type * as vscode from 'vscode';
import type { RunSnapshot } from '../../../runner/src/protocol/rpcFix.js';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { shortTitle } from '../views/runTitle.js';
import { DetailsPanel } from './detailsPanel.js';

/** Attempt details panels: one per run and attempt, its finished cells' logs included, refreshed while open. */
export class AttemptDetails {
  constructor(private readonly deps: { runner: RunnerConnection; extensionUri: vscode.Uri }) {}

  async show(runId: string, index: number): Promise<void> {
    const { runner, extensionUri } = this.deps;
    const details = await runner.request('attempts/details', { run_id: runId, index });
    const cells = await Promise.all(
      details.cells.map(async (c) =>
        c.running ? c : { ...c, log: (await runner.request('cells/log', { run_id: runId, cell_id: c.cell_id })).log },
      ),
    );
    DetailsPanel.show(extensionUri, `attempt:${runId}:${index}`, `Attempt ${index} · ${shortTitle(details.run.issue_title) || runId}`, {
      kind: 'attempt',
      data: { ...details, cells },
    });
  }

  /** A run changed: the open panels of its attempts show the new state. */
  refreshOpen(snap: RunSnapshot): void {
    for (const a of snap.attempts) {
      if (DetailsPanel.isOpen(`attempt:${snap.run.run_id}:${a.index}`)) void this.show(snap.run.run_id, a.index);
    }
  }
}
