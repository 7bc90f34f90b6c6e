import * as vscode from 'vscode';

/** A command handler; arguments are what VS Code passes (a tree node, a row), if anything. */
export type CommandHandler = (...args: never[]) => Promise<unknown> | unknown;

/** Registers a command whose failure is logged with its stack and shown as one line, never thrown into VS Code. */
export function registerGuarded(log: vscode.LogOutputChannel, name: string, handler: CommandHandler): vscode.Disposable {
  return vscode.commands.registerCommand(name, async (...args: never[]) => {
    try {
      return await handler(...args);
    } catch (e) {
      const message = (e as Error).message.split('\n')[0];
      log.error(`${name}: ${(e as Error).stack ?? message}`);
      void vscode.window.showErrorMessage(`Forge: ${message}`);
      return undefined;
    }
  });
}
