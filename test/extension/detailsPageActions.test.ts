import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activate, deactivate } from '../../extension/src/extension.js';
import type { AttemptsNode } from '../../extension/src/views/attemptsView.js';
import type { AttemptActionStates } from '../../runner/src/protocol/webviewMessages.js';
import { fake, fakeExtensionContext, Uri } from './fakes/vscode.js';
import { fixIssueWrittenInDraft } from './fakes/draftUser.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';
import { waitFor } from '../helpers/waitFor.js';

type Provider<T> = { getChildren(n?: T): T[]; getTreeItem(n: T): { command?: { command: string; arguments?: unknown[] } } };

/**
 * Issue 31: the attempt details page's buttons, through the extension with a fake VS Code API
 * and the real runner. The page is untrusted: what it posts names an action only; the panel
 * runs that action's command on its own run and attempt, and nothing for anything else.
 */
describe('attempt details page actions (fake VS Code, real runner)', function () {
  this.timeout(180_000);
  let repo: { dir: string; cleanup: () => void };
  let state: string;
  let savedState: string | undefined;

  before(async () => {
    if (!existsSync(join(process.cwd(), 'dist', 'native-abi.json'))) throw new Error('dist/ is missing: run npm run build first');
    fake.reset();
    savedState = process.env.FORGE_STATE_DIR;
    state = mkdtempSync(join(tmpdir(), 'forge-ext-state-'));
    process.env.FORGE_STATE_DIR = state;
    repo = sampleRepo('py-calc');
    fake.workspaceFolders = [{ uri: Uri.file(repo.dir), name: 'py-calc', index: 0 }];
    fake.config.set('forge.model', `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`);
    fake.config.set('forge.attempts', 2);
    fake.config.set('forge.provider', 'host');
    const api = activate(fakeExtensionContext(process.cwd()) as never);
    await api.runner.start();
    await fixIssueWrittenInDraft('average() divides by n+1; test_average_of_two fails');
  });
  after(async () => {
    await deactivate();
    if (savedState === undefined) delete process.env.FORGE_STATE_DIR;
    else process.env.FORGE_STATE_DIR = savedState;
    repo.cleanup();
    rmSync(state, { recursive: true, force: true });
  });

  it('the page of the attempt that did not win gets its four actions; a forged message runs nothing or only its own attempt', async () => {
    const attempts = fake.treeViews.get('forge.attempts')!.treeDataProvider as Provider<AttemptsNode>;
    const [runNode] = attempts.getChildren();
    const red = attempts.getChildren(runNode).find((n) => n.kind === 'attempt' && !n.attempt.winner);
    assert.ok(red?.kind === 'attempt');
    const item = attempts.getTreeItem(red);
    await fake.commands.get(item.command!.command)!(...(item.command!.arguments ?? []));
    const panel = fake.webviews.at(-1)!;
    assert.match(panel.title, new RegExp(`^Attempt ${red.attempt.index} · average\\(\\) divides by n\\+1.* · \\d\\d:\\d\\d$`));
    assert.doesNotMatch(panel.title, /run-/);
    panel.receive({ type: 'ready' });
    const msg = panel.posted[0] as { actions: AttemptActionStates; data: { cells: { purpose: string; purpose_words?: string }[] } };
    assert.deepEqual(
      Object.entries(msg.actions).map(([k, v]) => [k, v.show, v.why]),
      [
        ['viewDiff', true, null],
        ['apply', true, null],
        ['applyPart', true, null],
        ['compareWithWinner', true, null],
      ],
    );
    assert.ok(msg.data.cells.every((c) => c.purpose_words && !c.purpose_words.includes('_')));

    const ran = () => fake.executed.filter((e) => e.command.startsWith('forge.'));
    fake.executed = [];
    for (const forged of [{ type: 'action', action: 'forge.applyWinner' }, { type: 'action' }, 'viewDiff', { type: 'ready2' }])
      panel.receive(forged);
    // An id in the message is ignored: the panel's own run and attempt are used.
    panel.receive({ type: 'action', action: 'viewDiff', run_id: 'run-other', index: 0, node: { runId: 'x' } });
    const view = await waitFor(() => fake.executed.find((e) => e.command === 'vscode.changes'), 30_000, 'the diff of the attempt');
    assert.deepEqual(
      ran().map((e) => e.command),
      ['forge.viewAttemptDiff'],
    );
    const node = ran()[0]!.args[0] as AttemptsNode;
    assert.ok(node.kind === 'attempt');
    assert.deepEqual([node.runId, node.attempt.index], [red.runId, red.attempt.index]);
    assert.match(
      String(view.args[0]),
      new RegExp(`^Forge: attempt ${red.attempt.index} of average\\(\\) divides by n\\+1.* · \\d\\d:\\d\\d$`),
    );
  });
});
