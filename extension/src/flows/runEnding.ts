/** How a run ended, as fix/finished said it. No `vscode` import: the words are tested as data. */
export interface RunEnding {
  status: string;
  error: string | null;
}

/** What a resumed run's ending means to the user (the caller offers Review on a fix). */
export function resumedMessage(runId: string, e: RunEnding): { level: 'info' | 'warning' | 'error'; text: string } {
  if (e.status === 'fixed') return { level: 'info', text: `Forge: resumed run ${runId} is fixed; its winner waits for review.` };
  if (e.status === 'not_fixed')
    return { level: 'warning', text: `Forge: resumed run ${runId} is not fixed: no attempt passed the tests. See the Attempts view.` };
  if (e.status === 'cancelled' || e.error === 'cancelled')
    return { level: 'info', text: `Forge: run ${runId} cancelled again; its cells were stopped. Resume Run continues it.` };
  return { level: 'error', text: `Forge: resumed run ${runId} did not finish: ${e.error ?? e.status}` };
}
