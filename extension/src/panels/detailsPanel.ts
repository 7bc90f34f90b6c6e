import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { DetailsMessage, DetailsPageMessage } from '../../../runner/src/protocol/webviewMessages.js';

export type { DetailsMessage };

/**
 * Webview panels for Attempt details and Instance details: the UI is dist/webview.js (Lit +
 * @vscode-elements/elements), the data arrives by postMessage. Strict CSP: only our script
 * (by nonce), our styles and the theme's; no network, no inline script.
 */
export class DetailsPanel {
  private static readonly open = new Map<string, DetailsPanel>();
  private pending: DetailsMessage;
  private ready = false;

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    message: DetailsMessage,
    onPageMessage?: (message: unknown) => void,
  ) {
    this.pending = message;
    const webview = panel.webview;
    const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview.js'));
    const codicons = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'codicon.css'));
    const nonce = randomBytes(16).toString('base64');
    webview.html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-${nonce}'; style-src ${webview.cspSource} 'unsafe-inline'; font-src ${webview.cspSource};">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${codicons.toString()}" id="vscode-codicon-stylesheet">
<title>${panel.title}</title></head>
<body><forge-details></forge-details><script type="module" nonce="${nonce}" src="${script.toString()}"></script></body></html>`;
    webview.onDidReceiveMessage((m: Partial<DetailsPageMessage> | undefined) => {
      if (m?.type === 'ready') {
        this.ready = true;
        void webview.postMessage(this.pending);
        // Anything else is the page's untrusted request: its owner checks it.
      } else onPageMessage?.(m);
    });
    panel.onDidDispose(() => {
      for (const [k, v] of DetailsPanel.open) if (v === this) DetailsPanel.open.delete(k);
    });
  }

  /** `onPageMessage`: the page's messages other than "ready" (untrusted), for a panel with buttons. */
  static show(
    extensionUri: vscode.Uri,
    key: string,
    title: string,
    message: DetailsMessage,
    onPageMessage?: (message: unknown) => void,
  ): void {
    const existing = DetailsPanel.open.get(key);
    if (existing) {
      existing.update(message);
      existing.panel.reveal();
      return;
    }
    const panel = vscode.window.createWebviewPanel('forge.details', title, vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist')],
    });
    DetailsPanel.open.set(key, new DetailsPanel(panel, extensionUri, message, onPageMessage));
  }

  /** Refreshes an open panel (e.g. when the run it shows changes). */
  static refresh(key: string, message: DetailsMessage): void {
    DetailsPanel.open.get(key)?.update(message);
  }

  static isOpen(key: string): boolean {
    return DetailsPanel.open.has(key);
  }

  private update(message: DetailsMessage): void {
    this.pending = message;
    if (this.ready) void this.panel.webview.postMessage(message);
  }
}
