import * as vscode from 'vscode';
import type { HealthReport } from '../../runner/src/protocol/health.js';
import { renderHealth } from './healthMarkdown.js';

/** The health details behind the status bar item: a read-only Markdown document, shown rendered. */
export class HealthDocument implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'forge-health';
  private text = '';
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly uri = vscode.Uri.from({ scheme: HealthDocument.scheme, path: '/Forge cell health.md' });

  provideTextDocumentContent(): string {
    return this.text;
  }

  async show(h: HealthReport, running: number, chosen: string): Promise<void> {
    this.text = renderHealth(h, running, chosen);
    this.changed.fire(this.uri);
    // Rendered (the Markdown preview); the source document where no preview is available.
    try {
      await vscode.commands.executeCommand('markdown.showPreview', this.uri);
      return;
    } catch {
      /* no Markdown preview in this editor */
    }
    const doc = await vscode.workspace.openTextDocument(this.uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    await vscode.window.showTextDocument(doc, { preview: true });
  }
}
