import * as vscode from 'vscode';
import type { RowView } from './presentation.js';

export function toTreeItem(view: RowView, collapsible: vscode.TreeItemCollapsibleState, id: string): vscode.TreeItem {
  const item = new vscode.TreeItem(view.label, collapsible);
  item.id = id;
  item.description = view.description;
  item.tooltip = view.tooltip;
  item.iconPath = new vscode.ThemeIcon(view.icon, view.color ? new vscode.ThemeColor(view.color) : undefined);
  item.contextValue = view.contextValue;
  return item;
}
