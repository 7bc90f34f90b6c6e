import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activate, deactivate, type ForgeApi } from '../../extension/src/extension.js';
import type { AttemptsNode } from '../../extension/src/views/attemptsView.js';
import { MAX_ISSUE_FILE_BYTES } from '../../extension/src/flows/issueText.js';
import { fake, fakeExtensionContext, Uri, window, workspace } from './fakes/vscode.js';
import { openIssueDraft, runCommand, writeIssueAndStart } from './fakes/draftUser.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';
import { waitFor } from '../helpers/waitFor.js';

type Provider<T> = {
  getChildren(n?: T): T[];
  getTreeItem(n: T): { label: string; description?: string; tooltip?: string };
};

/**
 * How the issue gets in, against the fake VS Code API and the real runner: a multi-line issue
 * written in the draft editor reaches fix/start whole, a file does too (palette or explorer),
 * and what cannot be an issue is refused in one line before anything starts. The runner's
 * side is read from the requests the extension sent it.
 */
describe('issue input: the draft editor and issue files (fake VS Code API, real runner)', function () {
  this.timeout(180_000);
  let api: ForgeApi;
  let repo: { dir: string; cleanup: () => void };
  let state: string;
  let savedState: string | undefined;
  /** Every fix/start params the extension sent. */
  const started: { issue: string; repo: string }[] = [];

  before(async () => {
    if (!existsSync(join(process.cwd(), 'dist', 'native-abi.json'))) throw new Error('dist/ is missing: run npm run build first');
    fake.reset();
    savedState = process.env.FORGE_STATE_DIR;
    state = mkdtempSync(join(tmpdir(), 'forge-issue-state-'));
    process.env.FORGE_STATE_DIR = state;
    repo = sampleRepo('py-calc');
    fake.workspaceFolders = [{ uri: Uri.file(repo.dir), name: 'py-calc', index: 0 }];
    fake.config.set('forge.model', `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`);
    fake.config.set('forge.attempts', 1);
    fake.config.set('forge.provider', 'host');
    api = activate(fakeExtensionContext(process.cwd()) as never);
    const request = api.runner.request.bind(api.runner);
    api.runner.request = (async (method: string, params: unknown) => {
      if (method === 'fix/start') started.push(params as { issue: string; repo: string });
      return request(method as never, params as never);
    }) as typeof api.runner.request;
    await api.runner.start();
  });
  after(async () => {
    await deactivate();
    if (savedState === undefined) delete process.env.FORGE_STATE_DIR;
    else process.env.FORGE_STATE_DIR = savedState;
    repo.cleanup();
    rmSync(state, { recursive: true, force: true });
  });

  it('the issue source reads naturally: write or paste in an editor, or choose a file', async () => {
    let labels: string[] = [];
    fake.quickPickAnswers.push((items) => void (labels = items.map((i) => i.label)));
    await runCommand('forge.fixIssue');
    assert.deepEqual(labels, ['$(edit) Write or paste the issue…', '$(file) Choose an issue file…']);
    assert.equal(started.length, 0);
  });

  it('a multi-line issue written in the draft reaches fix/start whole; the draft closes; the run is titled by its first line', async () => {
    const { flow, draft } = await openIssueDraft();
    assert.equal(draft.languageId, 'markdown');
    assert.match(draft.getText(), /^\n\n<!-- Forge: write the issue above\./, 'the first line is left to write on');
    assert.equal(fake.contexts.get('forge.issueDraft'), true, 'Start Fix shows in the title bar');

    await runCommand('forge.startFixFromEditor', draft.uri);
    assert.ok(
      fake.messages.some((m) => m.level === 'warning' && /^Forge: the issue is empty\./.test(m.text)),
      JSON.stringify(fake.messages),
    );
    assert.equal(draft.isClosed, false, 'an empty draft stays open');

    const issue = [
      '# average() is wrong for two values and more: average([2, 4]) returns 2.0 instead of 3.0',
      '',
      'Steps to reproduce:',
      '',
      '    >>> average([2, 4])',
      '    2.0',
      '',
      'test_average_of_two fails.',
    ].join('\n');
    await writeIssueAndStart(draft, issue);
    assert.equal(draft.isClosed, true, 'the draft is closed (reverted, no save prompt)');
    assert.equal(fake.contexts.get('forge.issueDraft'), false);
    await flow;
    assert.equal(started.length, 1);
    assert.equal(started[0]!.issue, issue, 'newlines and indentation kept, the comment left out');
    assert.equal(started[0]!.repo, repo.dir, 'the folder chosen before the draft opened');
    assert.ok(
      fake.messages.some((m) => /Forge: fixed/.test(m.text)),
      JSON.stringify(fake.messages.slice(-2)),
    );

    const runs = fake.treeViews.get('forge.attempts')!.treeDataProvider as Provider<AttemptsNode>;
    const row = await waitFor(
      () =>
        runs
          .getChildren()
          .map((n) => runs.getTreeItem(n))
          .find((r) => r.label.startsWith('average() is wrong')),
      10_000,
      'the run row',
    );
    assert.equal(row.label, 'average() is wrong for two values and more: average([2, 4])…');
    // Only a run started just before midnight shows a date.
    // The replay sends no usage figures: its tokens are unknown ("?"), never 0.
    assert.match(row.description!, /^(?:[A-Z][a-z]{2} \d{1,2} )?\d\d:\d\d · fixed · review · 1 on host · \? tok · \d+ s$/);
    assert.equal(row.tooltip!.split('\n')[0], 'average() is wrong for two values and more: average([2, 4]) returns 2.0 instead of 3.0');
  });

  it('a draft closed without Start Fix ends the flow quietly', async () => {
    const before = fake.messages.length;
    const { flow, draft } = await openIssueDraft();
    fake.closeDocument(draft);
    await flow;
    assert.equal(started.length, 1, 'nothing started');
    assert.deepEqual(fake.messages.slice(before), []);
  });

  it('a draft restored without its flow (a window reload) still starts a fix with its text', async () => {
    const doc = await workspace.openTextDocument({
      language: 'markdown',
      content: 'average() is wrong\nsecond line\n\n<!-- Forge: write the issue above. -->\n',
    });
    await window.showTextDocument(doc);
    assert.equal(fake.contexts.get('forge.issueDraft'), true);
    await runCommand('forge.startFixFromEditor');
    assert.equal(started.length, 2);
    assert.equal(started[1]!.issue, 'average() is wrong\nsecond line');
    assert.equal((doc as unknown as { isClosed: boolean }).isClosed, true);
  });

  it('Fix Issue from File from the explorer: the whole file is the issue, for the folder that holds it', async () => {
    const file = join(repo.dir, 'docs-issue.md');
    const text = '# average() is wrong\n\naverage([5]) returns 2.5.\n';
    writeFileSync(file, text);
    await runCommand('forge.fixIssueFromFile', Uri.file(file));
    assert.equal(started.at(-1)!.issue, text);

    assert.equal(started.length, 3);
    rmSync(file);
  });

  it('Fix Issue from File from the palette asks for the file, and a file that cannot be an issue is refused in one line', async () => {
    const empty = join(repo.dir, 'empty-issue.md');
    writeFileSync(empty, '');
    const before = fake.messages.length;
    fake.openDialogAnswers.push([Uri.file(empty)]);
    await runCommand('forge.fixIssueFromFile');
    assert.deepEqual(
      fake.messages.slice(before).map((m) => m.text),
      [`Forge: ${empty} is empty`],
    );
    fake.openDialogAnswers.push(undefined);
    await runCommand('forge.fixIssueFromFile');
    assert.equal(fake.messages.length, before + 1, 'the dialog dismissed: nothing said');
    assert.equal(started.length, 3);
    rmSync(empty);
  });

  it('Fix Issue from File refuses an empty, a binary or a too-large file in one line, before anything starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-issue-files-'));
    try {
      const files = {
        'empty.md': Buffer.from('\n  \n'),
        'image.md': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]),
        'huge.txt': Buffer.alloc(MAX_ISSUE_FILE_BYTES + 1024, 'a'),
      };
      for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
      const before = fake.messages.length;
      for (const name of Object.keys(files)) await runCommand('forge.fixIssueFromFile', Uri.file(join(dir, name)));
      const errors = fake.messages.slice(before).map((m) => `${m.level}: ${m.text}`);
      assert.equal(errors.length, 3, JSON.stringify(errors));
      assert.match(errors[0]!, /^error: Forge: .*empty\.md is empty$/);
      assert.match(errors[1]!, /^error: Forge: .*image\.md is not a text file/);
      assert.match(errors[2]!, /^error: Forge: .*huge\.txt is 201 KB; an issue file may be at most 200 KB$/);
      assert.equal(started.length, 3, 'nothing started');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
