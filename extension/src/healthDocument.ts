import * as vscode from 'vscode';
import type { HealthReport } from '../../runner/src/protocol/health.js';

/** The health details behind the status bar item, as a read-only markdown document. */
export function renderHealth(h: HealthReport, running: number, chosen: string): string {
  const lines = [
    `# Forge cell health`,
    '',
    `Checked ${h.generated_at}. ${running} cell(s) running. Provider setting (forge.provider): **${chosen}**; runner default: ${h.default_provider ?? 'none'}.`,
    '',
  ];
  for (const p of h.providers) {
    lines.push(`## ${p.provider}: ${p.available ? 'available ✓' : 'unavailable ✗'}`, '', p.reason, '');
    if (p.isolation) lines.push(`Isolation: ${JSON.stringify(p.isolation)}`, '');
    for (const [k, v] of Object.entries(p.details)) lines.push(`- ${k}: ${v}`);
    lines.push('');
  }
  return lines.join('\n');
}

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
    const doc = await vscode.workspace.openTextDocument(this.uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    await vscode.window.showTextDocument(doc, { preview: true });
  }
}
