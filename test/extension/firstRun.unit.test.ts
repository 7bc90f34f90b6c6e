import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunSummary } from '../../runner/src/protocol/rpcFix.js';
import { activate, deactivate } from '../../extension/src/extension.js';
import { firstRunDecision, WALKTHROUGH_ID } from '../../extension/src/firstRun/walkthroughDecision.js';
import { ForgeState } from '../../extension/src/forgeState.js';
import { bindAttemptsScope } from '../../extension/src/views/attemptsView.js';
import { fake, fakeExtensionContext } from './fakes/vscode.js';

interface Step {
  id: string;
  title: string;
  description: string;
  media: { markdown?: string; svg?: string; image?: string };
  completionEvents?: string[];
}
interface Manifest {
  publisher: string;
  name: string;
  icon?: string;
  contributes: {
    walkthroughs: { id: string; title: string; steps: Step[] }[];
    viewsWelcome: { view: string; contents: string; when?: string }[];
    viewsContainers: { activitybar: { id: string; icon: string }[] };
    views: Record<string, { id: string; icon?: string }[]>;
    commands: { command: string }[];
  };
}

const root = process.cwd();
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;
const walkthroughRef = `${manifest.publisher}.${manifest.name}#${WALKTHROUGH_ID}`;
const opened = () => fake.executed.filter((e) => e.command === 'workbench.action.openWalkthrough');
/** The walkthrough is opened on a timer after activation returns. */
const settle = () => new Promise((r) => setTimeout(r, 5));

const summary = (over: Partial<RunSummary>): RunSummary => ({
  run_id: 'run-1',
  status: 'fixed',
  created_at: '',
  updated_at: '',
  repo: '/w/app',
  base_commit: 'abc',
  issue_title: 'x',
  test_cmd: 'npm test',
  provider: 'host',
  image: '',
  model: 'replay:x',
  attempts: 3,
  winner_attempt: null,
  review: 'pending',
  error: null,
  environment: null,
  ending: null,
  ...over,
});

describe('first run: the walkthrough', () => {
  beforeEach(() => {
    fake.reset();
    // A runtime that cannot run: no runner process is started.
    fake.config.set('forge.runner.nodePath', '/nonexistent/node');
  });
  afterEach(async () => {
    await deactivate();
    fake.reset();
  });

  it('opens once, after activation returns, and not on the next activation (a reload)', async () => {
    const ctx = fakeExtensionContext(root);
    activate(ctx as never);
    assert.equal(opened().length, 0, 'activation does not wait for the walkthrough');
    await settle();
    // inactive: shown without taking the keyboard focus from whatever the user opened meanwhile.
    assert.deepEqual(
      opened().map((e) => e.args),
      [[walkthroughRef, { toSide: false, inactive: true }]],
    );
    await deactivate();
    fake.executed = [];
    // The same machine's globalState, a new extension host.
    activate({ ...fakeExtensionContext(root), globalState: ctx.globalState } as never);
    await settle();
    assert.equal(opened().length, 0, 'not again after the first time');
    assert.deepEqual([firstRunDecision(undefined).open, firstRunDecision(true).open], [true, false]);
    assert.equal(firstRunDecision(undefined, false).open, false, 'workbench.welcomePage.walkthroughs.openOnInstall off: never opened');
  });

  it('"Forge: Get Started" reopens it any time', async () => {
    const ctx = fakeExtensionContext(root);
    await ctx.globalState.update('forge.walkthroughShown', true);
    activate(ctx as never);
    await settle();
    assert.equal(opened().length, 0);
    await fake.commands.get('forge.getStarted')!();
    assert.deepEqual(
      opened().map((e) => e.args),
      [[walkthroughRef, false]],
    );
  });

  it('goes from choosing a model to reviewing the winner, each step with completion events and media of our own', () => {
    const w = manifest.contributes.walkthroughs.find((x) => x.id === WALKTHROUGH_ID);
    assert.ok(w, 'package.json contributes the walkthrough the extension opens');
    assert.deepEqual(
      w.steps.map((s) => s.title),
      ['Choose a model', 'Choose where cells run', 'Fix an issue', 'Review the winner'],
    );
    const events = w.steps.flatMap((s) => s.completionEvents ?? []);
    for (const e of [
      'onSettingChanged:forge.model',
      'onSettingChanged:forge.provider',
      'onContext:forge.runActive',
      'onContext:forge.reviewing',
    ])
      assert.ok(events.includes(e), e);
    // A step completing on a command moves the keyboard focus into the walkthrough while that
    // command's quick pick or input box is open (typing then goes nowhere): these complete on state.
    for (const asks of ['forge.fixIssue', 'forge.fixIssueFromFile', 'forge.setApiKey', 'forge.reviewWinner'])
      assert.ok(!events.includes(`onCommand:${asks}`), `no step completes on ${asks}, which asks for input`);
    const contributed = new Set(manifest.contributes.commands.map((c) => c.command));
    for (const s of w.steps) {
      assert.ok((s.completionEvents ?? []).length > 0, `${s.id} can be completed`);
      const file = s.media.markdown ?? s.media.svg ?? s.media.image ?? '';
      assert.match(file, /^media\/walkthrough\//);
      assert.ok(existsSync(join(root, file)), file);
      // Every button of a step runs a command that exists.
      for (const [, id] of s.description.matchAll(/\(command:([\w.]+)/g))
        assert.ok(id!.startsWith('workbench.') || contributed.has(id!), `${s.id}: ${id}`);
    }
  });
});

describe('first run: views and icon', () => {
  beforeEach(() => fake.reset());

  it('the Attempts view keeps its Fix Issue welcome when no run of this window is listed but others are hidden', () => {
    const state = new ForgeState();
    const view = { message: undefined as string | undefined };
    bindAttemptsScope(view as never, state);
    state.setScope(['/w/app']);
    state.setRuns(Array.from({ length: 10 }, (_, i) => summary({ run_id: `r${i}`, repo: '/w/other' })));
    assert.equal(view.message, undefined, 'a message would replace the welcome and its button');
    assert.equal(fake.contexts.get('forge.onlyHiddenRuns'), true);
    const welcome = manifest.contributes.viewsWelcome.find((v) => v.view === 'forge.attempts' && v.when === 'forge.onlyHiddenRuns');
    assert.match(welcome?.contents ?? '', /\[Fix Issue in Cells\]\(command:forge\.fixIssue\)/);
    assert.match(welcome?.contents ?? '', /not open in this window are hidden.*command:forge\.showAllRuns/);
    // A run of this window: listed, and the line above says how many others are hidden.
    state.setRuns([summary({ run_id: 'mine' }), ...state.runs]);
    assert.equal(fake.contexts.get('forge.onlyHiddenRuns'), false);
    assert.match(view.message ?? '', /^10 runs of repositories not open in this window are hidden/);
  });

  it('the Instances view, empty, explains durable instances and offers a button, not a CLI line to copy', () => {
    const welcome = manifest.contributes.viewsWelcome.filter((v) => v.view === 'forge.instances');
    assert.equal(welcome.length, 1);
    assert.match(welcome[0]!.contents, /durable instance is a long-lived runtime/);
    assert.match(welcome[0]!.contents, /\n\[Open the Durable Instances Guide\]\(command:forge\.openInstancesGuide\)/);
    assert.doesNotMatch(welcome[0]!.contents, /`forge-runner instance provision`/);
  });

  it('the Instances guide button opens docs/instances.md as a preview (the VSIX ships it)', async () => {
    fake.config.set('forge.runner.nodePath', '/nonexistent/node');
    activate(fakeExtensionContext(root) as never);
    try {
      await fake.commands.get('forge.openInstancesGuide')!();
      const preview = fake.executed.find((e) => e.command === 'markdown.showPreview');
      assert.match(String((preview?.args[0] as { fsPath: string }).fsPath), /\/docs\/instances\.md$/);
      assert.match(readFileSync(join(root, 'scripts', 'package-vsix.mjs'), 'utf8'), /copy\('docs\/instances\.md'\)/);
    } finally {
      await deactivate();
    }
  });

  it('the activity bar and the views use our own monochrome 24x24 icon; the extension has a 128x128 PNG icon', () => {
    const icon = manifest.contributes.viewsContainers.activitybar.find((c) => c.id === 'forge')!.icon;
    const svg = readFileSync(join(root, icon), 'utf8');
    assert.match(svg, /viewBox="0 0 24 24"/);
    assert.match(svg, /currentColor/);
    assert.doesNotMatch(svg, /#[0-9a-f]{3,6}\b/i, 'monochrome: the theme colours it');
    for (const v of manifest.contributes.views.forge!) assert.equal(v.icon, icon);
    const png = readFileSync(join(root, manifest.icon!));
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [128, 128], 'PNG width and height');
  });
});
