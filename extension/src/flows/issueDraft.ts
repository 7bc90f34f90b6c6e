import * as vscode from 'vscode';
import { DRAFT_MARKER, issueDraftTemplate, issueFromDraft } from './issueText.js';

/** The context key that shows Start Fix in the editor title bar while an issue draft is the active editor. */
export const DRAFT_CONTEXT = 'forge.issueDraft';

/**
 * Issue drafts: untitled Markdown documents the user writes the issue in. A draft opened by
 * Fix Issue in Cells hands its text back to that flow on Start Fix, so the folder and the
 * pre-flight answers chosen before it opened still hold. A draft whose flow is gone (the
 * window was reloaded and VS Code restored the untitled document) is still recognised by its
 * comment and starts a new flow.
 */
export class IssueDrafts implements vscode.Disposable {
  /** Draft URI -> the waiting flow's resolve. */
  private readonly pending = new Map<string, (issue: string | undefined) => void>();
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    this.subscriptions = [
      vscode.window.onDidChangeActiveTextEditor((e) => this.updateContext(e)),
      // Closed without Start Fix (saved elsewhere or discarded): the flow ends quietly.
      vscode.workspace.onDidCloseTextDocument((doc) => {
        const key = doc.uri.toString();
        this.pending.get(key)?.(undefined);
        this.pending.delete(key);
      }),
    ];
    this.updateContext(vscode.window.activeTextEditor);
  }

  /** Opens a draft; resolves with the issue on Start Fix, or undefined if the draft is closed without it. */
  async open(untracked: string | null): Promise<string | undefined> {
    const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: issueDraftTemplate(untracked) });
    const issue = new Promise<string | undefined>((resolve) => this.pending.set(doc.uri.toString(), resolve));
    this.updateContext(await vscode.window.showTextDocument(doc, { preview: false }));
    return issue;
  }

  /**
   * Start Fix on a draft (the title bar passes its URI; the palette, none: the active editor).
   * An empty draft stays open with one line saying so. `startFlow` runs a new Fix Issue flow for
   * a draft nothing waits for; `take` closes the draft and gives its issue once that flow is ready.
   */
  async startFix(uri: vscode.Uri | undefined, startFlow: (take: () => Promise<string>) => Promise<void>): Promise<void> {
    const doc = uri
      ? vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString())
      : vscode.window.activeTextEditor?.document;
    if (!doc || !this.isDraft(doc)) {
      void vscode.window.showErrorMessage('Forge: Start Fix works in an issue draft; run Forge: Fix Issue in Cells to open one.');
      return;
    }
    const issue = issueFromDraft(doc.getText());
    if (issue === '') {
      void vscode.window.showWarningMessage('Forge: the issue is empty. Write what is wrong and how to see it, then Start Fix.');
      return;
    }
    const key = doc.uri.toString();
    const waiting = this.pending.get(key);
    if (waiting) {
      this.pending.delete(key);
      await this.close(doc);
      waiting(issue);
      return;
    }
    await startFlow(async () => {
      await this.close(doc);
      return issue;
    });
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    for (const resolve of this.pending.values()) resolve(undefined);
    this.pending.clear();
  }

  private isDraft(doc: vscode.TextDocument): boolean {
    if (this.pending.has(doc.uri.toString())) return true;
    return doc.uri.scheme === 'untitled' && doc.getText().includes(DRAFT_MARKER);
  }

  private updateContext(editor: vscode.TextEditor | undefined): void {
    void vscode.commands.executeCommand('setContext', DRAFT_CONTEXT, editor !== undefined && this.isDraft(editor.document));
  }

  /** Closes the draft without a save prompt: revert (an untitled document then has nothing to save), then close. */
  private async close(doc: vscode.TextDocument): Promise<void> {
    // Both commands act on the active editor: make it the draft, in the group it is in (Start Fix may be clicked in another split).
    const viewColumn = vscode.window.visibleTextEditors.find((e) => e.document === doc)?.viewColumn;
    await vscode.window.showTextDocument(doc, { preview: false, ...(viewColumn ? { viewColumn } : {}) });
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    // With a Markdown preview open (the cell health page), the draft could stay in another
    // group, and a preview that followed it stays too: every tab of the draft, and its preview, goes.
    const name = doc.uri.path.split('/').at(-1) ?? '';
    const left = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => {
        const input = t.input as { uri?: vscode.Uri } | undefined;
        return !t.isDirty && (input?.uri?.toString() === doc.uri.toString() || (name !== '' && t.label === `Preview ${name}`));
      });
    if (left.length > 0) await vscode.window.tabGroups.close(left);
  }
}
