import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activate, deactivate, type ForgeApi } from '../../extension/src/extension.js';
import type { AttemptsNode } from '../../extension/src/views/attemptsView.js';
import type { CellSnapshot } from '../../runner/src/protocol/rpcFix.js';
import { fake, fakeExtensionContext, Uri, workspace } from './fakes/vscode.js';
import { fixIssueWrittenInDraft, openIssueDraft, writeIssueAndStart } from './fakes/draftUser.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';
import { git } from '../helpers/gitRepo.js';
import { waitFor } from '../helpers/waitFor.js';

type Provider<T> = {
  getChildren(n?: T): T[];
  getTreeItem(n: T): { label: string; description?: string; contextValue?: string; command?: { command: string; arguments?: unknown[] } };
};

/**
 * The extension activated against a fake VS Code API (the user's answers scripted) and the
 * real bundled runner: Fix Issue in Cells, the views, review, apply, the status bar, the
 * webview, and a runner crash with restart.
 */
describe('extension with a fake VS Code API and the real runner', function () {
  this.timeout(180_000);
  let api: ForgeApi;
  let repo: { dir: string; cleanup: () => void };
  let state: string;
  let savedState: string | undefined;
  const command = (id: string, ...args: unknown[]) => {
    const f = fake.commands.get(id);
    if (!f) throw new Error(`command ${id} not registered`);
    return f(...args) as Promise<unknown>;
  };

  before(async () => {
    if (!existsSync(join(process.cwd(), 'dist', 'native-abi.json'))) throw new Error('dist/ is missing: run npm run build first');
    fake.reset();
    // The root hook's state dir, put back afterwards (read here: the hook runs before this, not at module load).
    savedState = process.env.FORGE_STATE_DIR;
    state = mkdtempSync(join(tmpdir(), 'forge-ext-state-'));
    process.env.FORGE_STATE_DIR = state;
    repo = sampleRepo('py-calc');
    fake.workspaceFolders = [{ uri: Uri.file(repo.dir), name: 'py-calc', index: 0 }];
    fake.config.set('forge.model', `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`);
    fake.config.set('forge.attempts', 2);
    fake.config.set('forge.provider', 'host');
    const t0 = performance.now();
    api = activate(fakeExtensionContext(process.cwd()) as never);
    assert.ok(performance.now() - t0 < 1000, 'activation does not wait for the runner');
    await api.runner.start();
  });
  after(async () => {
    await deactivate();
    if (savedState === undefined) delete process.env.FORGE_STATE_DIR;
    else process.env.FORGE_STATE_DIR = savedState;
    repo.cleanup();
    rmSync(state, { recursive: true, force: true });
  });

  it('registers every contributed command and the three views', () => {
    const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as {
      contributes: { commands: { command: string }[]; views: { forge: { id: string }[] } };
    };
    assert.deepEqual(
      pkg.contributes.commands.map((c) => c.command).filter((c) => !fake.commands.has(c)),
      [],
    );
    assert.deepEqual([...fake.treeViews.keys()].sort(), pkg.contributes.views.forge.map((v) => v.id).sort());
  });

  it('the status bar shows the chosen provider, its health and the model once the runner answered', async () => {
    const item = fake.statusItems[0]!;
    await waitFor(() => /Forge: host ✓ · replay$/.test(item.text), 30_000, 'status text');
    assert.equal(item.command, 'forge.showCellHealth');
  });

  it('Fix Issue in Cells: issue typed, run to the winner, review opens as a multi-file diff of read-only documents', async () => {
    fake.messageAnswers.push('Review');
    await fixIssueWrittenInDraft('average() divides by n+1; test_average_of_two fails');
    const fixed = fake.messages.find((m) => /Forge: fixed/.test(m.text));
    assert.ok(fixed, JSON.stringify(fake.messages));
    assert.deepEqual(fixed.items, ['Review', 'Apply', 'Discard']);
    const changes = fake.executed.find((e) => e.command === 'vscode.changes');
    assert.ok(changes, 'vscode.changes was opened');
    const resources = changes.args[1] as Uri[][];
    assert.equal(resources.length, 1);
    assert.equal(resources[0]![0]!.fsPath, join(repo.dir, 'calc.py'));
    const docs = fake.contentProviders.get('forge-review')!;
    assert.match(String(await docs.provideTextDocumentContent(resources[0]![1]!)), /len\(values\) \+ 1/);
    assert.doesNotMatch(String(await docs.provideTextDocumentContent(resources[0]![2]!)), /len\(values\) \+ 1/);
    assert.equal(fake.contexts.get('forge.reviewing'), true);
  });

  it('the Attempts view lists the run and its attempts from pushed snapshots; the Cells view opens bounded logs', async () => {
    const attempts = fake.treeViews.get('forge.attempts')!.treeDataProvider as Provider<AttemptsNode>;
    const [runNode] = attempts.getChildren();
    assert.equal(attempts.getTreeItem(runNode!).contextValue, 'run.fixed.pending');
    const rows = attempts.getChildren(runNode).map((n) => attempts.getTreeItem(n));
    assert.deepEqual(
      rows.map((r) => r.label),
      ['attempt 0', 'attempt 1'],
    );
    // The replay sends no usage figures: its tokens are unknown ("?"), never 0.
    assert.match(rows[0]!.description!, /^winner · \d+ turns · \? tok · \d+ s · \+1 −1$/);
    assert.match(rows[1]!.description!, /^red/);
    const cells = fake.treeViews.get('forge.cells')!.treeDataProvider as Provider<CellSnapshot>;
    const baseline = cells.getChildren().find((c) => c.purpose === 'baseline')!;
    const item = cells.getTreeItem(baseline);
    assert.match(item.description!, /^host · .* · exit 1$/);
    await command(item.command!.command, ...(item.command!.arguments ?? []));
    const uri = workspace.openedDocuments.at(-1)!;
    const log = String(await fake.contentProviders.get('forge-log')!.provideTextDocumentContent(uri));
    assert.match(log, /^# baseline cell .* exit 1/);
    assert.match(log, /FAILED|failed/);
  });

  it('Attempt details open in a webview with a strict CSP and get the attempt once the page is ready', async () => {
    const attempts = fake.treeViews.get('forge.attempts')!.treeDataProvider as Provider<AttemptsNode>;
    const winner = attempts.getChildren(attempts.getChildren()[0]).find((n) => n.kind === 'attempt' && n.attempt.winner)!;
    const item = attempts.getTreeItem(winner);
    await command(item.command!.command, ...(item.command!.arguments ?? []));
    const panel = fake.webviews.at(-1)!;
    assert.match(panel.html, /Content-Security-Policy" content="default-src 'none'; script-src 'nonce-[^']+';/);
    assert.doesNotMatch(panel.html, /unsafe-eval|https?:\/\//);
    assert.equal(panel.posted.length, 0, 'nothing is posted before the page says it is ready');
    panel.receive({ type: 'ready' });
    const msg = panel.posted[0] as {
      kind: string;
      data: { attempt: { winner: boolean }; verdict: { green: boolean }; turns: unknown[]; cells: { log?: string }[] };
    };
    assert.equal(msg.kind, 'attempt');
    assert.deepEqual([msg.data.attempt.winner, msg.data.verdict.green], [true, true]);
    assert.ok(msg.data.turns.length >= 1 && msg.data.cells.some((c) => (c.log ?? '').length > 0));
  });

  it('any attempt: View Diff shows its change, Compare with Winner puts it next to the winner; its menu offers Apply This Attempt', async () => {
    const attempts = fake.treeViews.get('forge.attempts')!.treeDataProvider as Provider<AttemptsNode>;
    const red = attempts.getChildren(attempts.getChildren()[0]).find((n) => n.kind === 'attempt' && !n.attempt.winner)!;
    assert.equal(attempts.getTreeItem(red).contextValue, 'attempt.changed.comparable');
    const content = fake.contentProviders.get('forge-review')!;
    const read = async (u: unknown) => String(await content.provideTextDocumentContent(u as Uri));
    fake.executed = [];
    await command('forge.viewAttemptDiff', red);
    const view = fake.executed.find((e) => e.command === 'vscode.changes')!;
    assert.match(String(view.args[0]), /^Forge: attempt 1 of /);
    const [, base, mine] = (view.args[1] as Uri[][])[0]!;
    assert.match(await read(base), /len\(values\) \+ 1/);
    assert.match(await read(mine), /sum\(values\) \/\/ len\(values\)/, 'the red attempt: integer division');
    fake.executed = [];
    await command('forge.compareWithWinner', red);
    const compare = fake.executed.find((e) => e.command === 'vscode.changes')!;
    assert.match(String(compare.args[0]), /^Forge: winner \(attempt 0\) vs attempt 1$/);
    const [, left, right] = (compare.args[1] as Uri[][])[0]!;
    assert.match(await read(left), /sum\(values\) \/ len\(values\)/);
    assert.match(await read(right), /sum\(values\) \/\/ len\(values\)/);
    // Apply This Attempt on the red one asks first; answered with nothing, nothing is written.
    const before = readFileSync(join(repo.dir, 'calc.py'), 'utf8');
    await command('forge.applyAttempt', red);
    assert.match(fake.messages.at(-1)!.text, /^Apply attempt 1 instead of the winner\? Its tests were red/);
    assert.equal(readFileSync(join(repo.dir, 'calc.py'), 'utf8'), before);
  });

  it('Apply writes the winner to the workspace and ends the review', async () => {
    await command('forge.applyWinner');
    assert.ok(
      fake.messages.some((m) => m.level === 'info' && /Applied the winner to .*calc\.py/.test(m.text)),
      JSON.stringify(fake.messages.slice(-3)),
    );
    assert.doesNotMatch(readFileSync(join(repo.dir, 'calc.py'), 'utf8'), /len\(values\) \+ 1/);
    assert.equal(fake.contexts.get('forge.reviewing'), false);
    await waitFor(() => api.state.runs[0]?.review === 'applied', 5000, 'review applied in the view state');
    // Apply again on that run (a notification shown before it was applied still offers it): said by its title, no error.
    await command('forge.applyWinner', { kind: 'run', run: api.state.runs[0] });
    assert.deepEqual(fake.messages.at(-1), {
      level: 'info',
      text: `Forge: "${api.state.runs[0]!.issue_title.split('\n')[0]}" is already applied to your working tree; nothing more to apply.`,
      items: [],
    });
  });

  it('Cancel in the progress notification cancels the run and its cells', async () => {
    const script = join(state, 'slow.json');
    writeFileSync(
      script,
      JSON.stringify({ version: 1, attempts: [[{ tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 120' } }] }]] }),
    );
    fake.config.set('forge.model', `replay:${script}`);
    git(repo.dir, 'checkout', '--', 'calc.py'); // the bug back: a failing baseline, a clean tree
    const before = fake.messages.length;
    const { flow, draft } = await openIssueDraft();
    await writeIssueAndStart(draft, 'slow issue');
    await waitFor(() => api.state.running.some((c) => c.purpose === 'run_command'), 60_000, 'the slow cell to run');
    assert.equal(fake.contexts.get('forge.runActive'), true);
    const t0 = Date.now();
    fake.cancelProgress();
    await flow;
    assert.ok(Date.now() - t0 < 30_000, 'cancel did not wait for the 120 s cell');
    assert.ok(
      fake.messages.slice(before).some((m) => /run cancelled "slow issue"; its cells were stopped/.test(m.text)),
      JSON.stringify(fake.messages.slice(before)),
    );
    assert.ok(fake.progress.some((l) => /cancelling/.test(l)));
    await waitFor(() => api.state.running.length === 0, 10_000, 'no cell running');
    assert.equal(fake.contexts.get('forge.runActive'), false);
    assert.equal(api.state.runs[0]!.status, 'cancelled');
    assert.equal(fake.contexts.get('forge.canResume'), true, 'Resume Run is in the palette');
    const cells = fake.treeViews.get('forge.cells')!.treeDataProvider as Provider<CellSnapshot>;
    const killed = await waitFor(
      () => cells.getChildren().find((c) => c.purpose === 'run_command'),
      5000,
      'the killed cell in the Cells view',
    );
    assert.match(cells.getTreeItem(killed).description!, / · cancelled$/, 'the cell the cancel killed is not shown as a failure');
    fake.config.set('forge.model', `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`);
  });

  it('Show Cell Health renders a read-only health document in the Markdown preview, the provider in use first', async () => {
    fake.executed = [];
    await command('forge.showCellHealth');
    const preview = fake.executed.find((e) => e.command === 'markdown.showPreview');
    assert.ok(preview, JSON.stringify(fake.executed.map((e) => e.command)));
    const uri = preview.args[0] as Uri;
    assert.equal(uri.scheme, 'forge-health');
    const text = String(await fake.contentProviders.get('forge-health')!.provideTextDocumentContent(uri));
    assert.match(text, /^# Forge cell health/);
    assert.match(text, /^## host \(in use\): ✓ available/m);
    assert.ok(text.indexOf('## host') < text.indexOf('## docker'), 'forge.provider is host: it comes first');
    assert.match(text, /\| Isolation \| \|/);
  });

  it('the Instances view follows pushed instance changes; details and reconcile work on a row', async () => {
    const instances = fake.treeViews.get('forge.instances')!.treeDataProvider as Provider<{ instance_id: string }>;
    await api.runner.request('instances/command', {
      request: {
        operation_id: 'ext-p1',
        instance_id: 'ext-1',
        generation: 1,
        action: 'provision',
        payload: { spec: { provider: 'host', probe_interval_ms: 50 } },
      },
    });
    try {
      const row = await waitFor(
        () => instances.getChildren().find((r) => r.instance_id === 'ext-1' && /^ready/.test(instances.getTreeItem(r).description ?? '')),
        30_000,
        'instance ready in the view',
      );
      const item = instances.getTreeItem(row);
      assert.equal(item.contextValue, 'instance');
      assert.match(item.description!, /^ready · gen 1 · host$/);
      await command(item.command!.command, ...(item.command!.arguments ?? []));
      const panel = fake.webviews.at(-1)!;
      panel.receive({ type: 'ready' });
      const msg = panel.posted[0] as { kind: string; data: { status: { cell: { state: string } }; history: { event: string }[] } };
      assert.equal(msg.kind, 'instance');
      assert.equal(msg.data.status.cell.state, 'ready');
      assert.ok(msg.data.history.some((e) => e.event === 'enrolled'));
      await command('forge.reconcileInstance', row);
      assert.ok(
        fake.messages.some((m) => /Forge: ext-1 is ready/.test(m.text)),
        JSON.stringify(fake.messages.slice(-2)),
      );
    } finally {
      await api.runner.request('instances/command', {
        request: { operation_id: 'ext-d1', instance_id: 'ext-1', generation: 1, action: 'destroy' },
      });
      await waitFor(
        () => api.state.instances.find((r) => r.instance_id === 'ext-1' && r.state === 'destroyed'),
        30_000,
        'instance destroyed',
      );
    }
  });

  it('a runner crash is shown once, the runner comes back, and the views show what the store recorded', async () => {
    const pid = api.runner.pid!;
    api.state.setRuns([]);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => api.runner.state === 'ready' && api.runner.pid !== pid, 20_000, 'restart');
    await waitFor(() => api.state.runs.length === 2, 10_000, 'runs reloaded');
    assert.deepEqual(
      api.state.runs.map((r) => [r.status, r.review]),
      [
        ['cancelled', null],
        ['fixed', 'applied'],
      ],
    );
    const second = api.runner.pid!;
    process.kill(second, 'SIGKILL');
    await waitFor(() => api.runner.state === 'ready' && api.runner.pid !== second, 20_000, 'second restart');
    const warnings = fake.messages.filter((m) => /the Forge runner killed by SIGKILL/.test(m.text));
    assert.equal(warnings.length, 1, 'two crashes in a row, one message');
    assert.deepEqual(warnings[0]!.items, ['Show Log']);
  });

  it('Resume Run on the cancelled row continues it with its progress shown, to a fix', async () => {
    // The cancelled run's model is its replay file: now it fixes instead of sleeping.
    writeFileSync(join(state, 'slow.json'), readFileSync(join(SAMPLES, 'py-calc', 'replay.json')));
    const attempts = fake.treeViews.get('forge.attempts')!.treeDataProvider as Provider<AttemptsNode>;
    const row = attempts.getChildren().find((n) => n.kind === 'run' && n.run.status === 'cancelled')!;
    assert.equal(attempts.getTreeItem(row).contextValue, 'run.cancelled');
    const runId = (row as { run: { run_id: string } }).run.run_id;
    const before = fake.messages.length;
    const progressBefore = fake.progress.length;
    await command('forge.resumeRun', row);
    assert.ok(
      fake.messages.slice(before).some((m) => /^Forge: fixed "[^"]+": attempt \d+ won/.test(m.text) && m.items.includes('Review')),
      JSON.stringify(fake.messages.slice(before)),
    );
    assert.ok(
      fake.progress.slice(progressBefore).some((l) => /^attempt 0: started/.test(l)),
      `the resumed run showed its progress: ${JSON.stringify(fake.progress.slice(progressBefore))}`,
    );
    await waitFor(() => api.state.runs.find((r) => r.run_id === runId)?.status === 'fixed', 5000, 'the run fixed in the view state');
    assert.equal(fake.contexts.get('forge.canResume'), false);
    assert.equal(fake.contexts.get('forge.runActive'), false);
    await assert.rejects(api.runner.request('fix/resume', { run_id: runId }), /already ended \(fixed\)/);
  });

  it('Discard from the fixed message asks first, then deletes the winner branch', async () => {
    fake.messageAnswers.push('Discard', 'Discard');
    const before = fake.messages.length;
    await fixIssueWrittenInDraft('average() divides by n+1');
    const shown = fake.messages.slice(before);
    // The question and the answer name the run by its issue, not its id.
    const confirm = shown.find((m) =>
      /^Discard the run "average\(\) divides by n\+1"\? Its winner \(attempt \d+\) was not applied: its branch/.test(m.text),
    );
    assert.ok(confirm, JSON.stringify(shown));
    assert.deepEqual(confirm.items, ['Discard']);
    assert.ok(
      shown.some((m) => /discarded the run "average\(\) divides by n\+1" .*branch forge\/attempt\//.test(m.text)),
      JSON.stringify(shown),
    );
    const discarded = await waitFor(() => api.state.runs[0]?.review === 'discarded' && api.state.runs[0], 5000, 'review discarded');
    assert.equal(git(repo.dir, 'branch', '--list', `forge/attempt/${discarded.run_id}-*`).trim(), '', 'its winner branch is gone');
    const applied = api.state.runs.find((r) => r.review === 'applied')!;
    assert.equal(
      git(repo.dir, 'branch', '--list', `forge/attempt/${applied.run_id}-*`).trim(),
      '',
      'the applied run lost its branch on Apply',
    );
  });
});
