import * as vscode from 'vscode';
import { issueFileSizeError, issueFromFileBytes } from './issueText.js';

/** Asks for an issue file (Markdown or plain text). */
export async function pickIssueFile(defaultUri: vscode.Uri | undefined): Promise<vscode.Uri | undefined> {
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false,
    ...(defaultUri ? { defaultUri } : {}),
    filters: { Issue: ['md', 'txt'], All: ['*'] },
    title: 'Forge: Issue file',
    openLabel: 'Fix This Issue',
  });
  return picked?.[0];
}

/** The issue in a file; throws one line naming the file when it cannot be one (too large, binary, empty). */
export async function readIssueFile(uri: vscode.Uri): Promise<string> {
  const name = vscode.workspace.asRelativePath(uri);
  // The size first, so a large file is refused without being read.
  const tooLarge = issueFileSizeError(name, (await vscode.workspace.fs.stat(uri)).size);
  if (tooLarge) throw new Error(tooLarge);
  const read = issueFromFileBytes(name, await vscode.workspace.fs.readFile(uri));
  if (!read.ok) throw new Error(read.error);
  return read.text;
}
