import * as vscode from 'vscode';

// The extension's views and commands arrive with their issue; until then activation only
// proves the bundle loads in a real extension host.
export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(vscode.Disposable.from());
}

export function deactivate(): void {}
