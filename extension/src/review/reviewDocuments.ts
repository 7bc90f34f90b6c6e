import { stripVTControlCharacters } from 'node:util';
import * as vscode from 'vscode';
import type { RunnerConnection } from '../runner/runnerConnection.js';
import { parseLogUri, parseReviewUri } from './reviewUris.js';

/** Base and attempt sides of a reviewed file, read from git objects by the runner (read-only documents). */
export class ReviewContentProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly runner: RunnerConnection) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseReviewUri(uri.path, uri.query);
    if (!ref) return `(not a Forge review document: ${uri.toString()})`;
    const r = await this.runner.request('review/content', {
      run_id: ref.runId,
      path: ref.path,
      side: ref.side,
      ...(ref.attempt !== undefined ? { attempt: ref.attempt } : {}),
    });
    if (r.content !== null) return r.content;
    return r.note === 'not present on this side' ? '' : `(${r.note ?? 'not shown'})`;
  }
}

/**
 * A cell's bounded log, as the cell returned it, without terminal colour and cursor codes: an
 * editor shows them as control boxes and `␛[32m`. (Attempt details render colour.)
 */
export class CellLogProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly runner: RunnerConnection) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseLogUri(uri.query);
    if (!ref) return '(not a Forge cell log)';
    const r = await this.runner.request('cells/log', { run_id: ref.runId, cell_id: ref.cellId });
    const c = r.cell;
    return `# ${c.purpose} cell ${c.cell_id} (${c.provider}${c.image ? ` ${c.image}` : ''}), exit ${c.exit_code}${c.killed_by ? `, killed by ${c.killed_by}` : ''}\n# $ ${c.command}\n\n${stripVTControlCharacters(r.log)}`;
  }
}
