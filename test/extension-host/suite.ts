import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ForgeApi } from '../../extension/src/extension.js';
import { waitFor } from '../helpers/waitFor.js';

/**
 * The extension-host suite: runs inside a real VS Code extension host, against the real
 * `vscode` API (code-server in CI via test/e2e/extensionHost.test.ts; desktop VS Code via
 * .vscode-test.mjs where it can be downloaded). FORGE_SAMPLES points at samples/.
 */
const SAMPLES = process.env.FORGE_SAMPLES ?? join(__dirname, '..', '..', 'samples');

describe('Forge Cells in a real extension host', function () {
  this.timeout(240_000);
  let api: ForgeApi;
  let repo: string;

  before(async () => {
    const ext = vscode.extensions.getExtension<ForgeApi>('forge-cells.forge-cells');
    assert.ok(ext, 'the extension is installed');
    api = await ext.activate();
    // Inside the window's folder: the views and the palette's Review/Apply act on the
    // repositories open in the window.
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(folder, 'the suite runs in a window with a folder open');
    repo = mkdtempSync(join(folder, 'forge-exthost-repo-'));
    cpSync(join(SAMPLES, 'py-calc', 'repo'), repo, { recursive: true });
    const git = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: repo,
        env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
      });
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-q', '-m', 'base');
  });
  after(() => rmSync(repo, { recursive: true, force: true }));

  it('activates, registers its commands and reaches the runner', async () => {
    const commands = await vscode.commands.getCommands(true);
    for (const c of [
      'forge.fixIssue',
      'forge.reviewWinner',
      'forge.applyWinner',
      'forge.discardAttempts',
      'forge.cancelRun',
      'forge.showCellHealth',
      'forge.gc',
    ]) {
      assert.ok(commands.includes(c), `${c} is registered`);
    }
    await api.runner.start();
    await waitFor(() => api.state.health, 60_000, 'health');
    assert.ok(api.state.health!.providers.some((p) => p.provider === 'host'));
  });

  it('a run started through the runner client shows up in the state; review opens a multi-file diff; apply changes the file', async () => {
    const { run_id } = await api.runner.request('fix/start', {
      repo,
      issue: readFileSync(join(SAMPLES, 'py-calc', 'issue.md'), 'utf8'),
      model: `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
      attempts: 2,
      provider: 'host',
    });
    await waitFor(() => api.state.runs.find((r) => r.run_id === run_id && r.status === 'fixed'), 180_000, 'the run to be fixed');
    await vscode.commands.executeCommand('forge.reviewWinner');
    const tab = await waitFor(
      () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.label.startsWith('Forge: winner')),
      20_000,
      'the review tab',
    );
    assert.ok(tab);
    const base = await vscode.workspace.openTextDocument(
      vscode.Uri.from({ scheme: 'forge-review', path: '/calc.py', query: `run=${run_id}&side=base` }),
    );
    assert.match(base.getText(), /len\(values\) \+ 1/);
    assert.equal(base.languageId, 'python');
    await vscode.commands.executeCommand('forge.applyWinner');
    assert.doesNotMatch(readFileSync(join(repo, 'calc.py'), 'utf8'), /len\(values\) \+ 1/);
    await waitFor(() => api.state.runs.find((r) => r.run_id === run_id)?.review === 'applied', 10_000, 'review applied');
  });
});
