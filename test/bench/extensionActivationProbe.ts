// One sample of extension activation, in a fresh process: require(dist/extension.cjs) and
// activate() against the fake VS Code API (the extension's own cost: module load, views,
// commands, status bar; the runner is started in the background and not waited for).
// Prints the milliseconds on stdout.
import Module, { createRequire } from 'node:module';
import { join } from 'node:path';
import * as fakeVscode from '../extension/fakes/vscode.js';

const root = process.cwd();
const load = (Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown })._load;
(Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown })._load = function (request: string, ...rest: unknown[]) {
  return request === 'vscode' ? fakeVscode : load.call(this, request, ...rest);
};
const require = createRequire(import.meta.url);
fakeVscode.fake.config.set('forge.provider', 'host');
const ctx = fakeVscode.fakeExtensionContext(root);
const t0 = performance.now();
const ext = require(join(root, 'dist', 'extension.cjs')) as { activate(c: unknown): unknown; deactivate(): Promise<void> | undefined };
ext.activate(ctx);
const ms = performance.now() - t0;
process.stdout.write(`${ms}\n`);
await ext.deactivate();
process.exit(0);
