import * as vscode from 'vscode';
import { firstRunDecision, WALKTHROUGH_ID, WALKTHROUGH_SHOWN_KEY } from './walkthroughDecision.js';

/** `<publisher>.<name>#<walkthrough id>`, as workbench.action.openWalkthrough wants it. */
function walkthroughRef(context: vscode.ExtensionContext): string {
  return `${context.extension?.id ?? 'forge-cells.forge-cells'}#${WALKTHROUGH_ID}`;
}

/** forge.getStarted: the walkthrough, any time. */
export function getStartedCommand(context: vscode.ExtensionContext) {
  return async (): Promise<void> => {
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', walkthroughRef(context), false);
  };
}

/**
 * Opens the walkthrough once, on the first activation after install: VS Code itself opens a
 * walkthrough on install only in some cases (not when the extension comes with a profile or a
 * CLI install, nor with workbench.startupEditor set). Scheduled on a timer, so activation does
 * not wait for it; the flag is written first, so a reload never opens it again.
 */
export function openWalkthroughOnFirstRun(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): vscode.Disposable {
  const openOnInstall = vscode.workspace.getConfiguration('workbench.welcomePage').get<boolean>('walkthroughs.openOnInstall', true);
  if (!firstRunDecision(context.globalState.get<boolean>(WALKTHROUGH_SHOWN_KEY), openOnInstall).open) return { dispose() {} };
  const timer = setTimeout(() => {
    void context.globalState
      .update(WALKTHROUGH_SHOWN_KEY, true)
      .then(() =>
        // inactive: shown in the editor area without taking the keyboard focus (its step pages
        // are webviews that focus themselves as they load, which took Enter away from a quick
        // pick the user had opened meanwhile, e.g. Fix Issue in Cells' first question).
        vscode.commands.executeCommand('workbench.action.openWalkthrough', walkthroughRef(context), { toSide: false, inactive: true }),
      )
      .then(undefined, (e: Error) => log.warn(`could not open the Get Started walkthrough: ${e.message}`));
  }, 0);
  return { dispose: () => clearTimeout(timer) };
}
