import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import {
  installExtension,
  launchChromium,
  closeWalkthrough,
  prepareUserData,
  requireCodeServer,
  runFromPalette,
  type RunningCodeServer,
  startCodeServer,
} from '../helpers/codeServer.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';

/**
 * The packaged VSIX in a real VS Code: code-server 4.100.3 (VS Code 1.100's workbench and
 * a Node extension host) driven by Playwright in Debian's Chromium. The replay model stands
 * in for the LLM; the runner, cells, tests, selection, review and apply are real.
 * Screenshots of every step land in test-results/e2e/.
 */
const SHOTS = join(process.cwd(), 'test-results', 'e2e');
const ROOT = process.cwd();

describe('VS Code extension end to end (packaged VSIX in code-server + Chromium)', function () {
  this.timeout(600_000);
  let work: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let repo: { dir: string; cleanup: () => void };
  // A second window, on an npm package whose test tool was never installed.
  let other: { dir: string; cleanup: () => void } | undefined;
  let page2: Page | undefined;
  let modelFile = '';
  let step = 0;
  const shot = async (name: string, on: Page = page) => {
    step += 1;
    await on.screenshot({ path: join(SHOTS, `${String(step).padStart(2, '0')}-${name}.png`) });
  };

  before(async function () {
    requireCodeServer(this);
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-'));
    // The replay model reads this file when a run starts or resumes: a test swaps its script.
    modelFile = join(work, 'model.json');
    copyFileSync(join(SAMPLES, 'py-calc', 'replay.json'), modelFile);
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
    const dirs = prepareUserData(work, {
      'forge.model': `replay:${modelFile}`,
      'forge.attempts': 4,
      'forge.provider': 'host',
    });
    assert.match(installExtension(dirs, join(ROOT, 'forge-cells-0.1.0.vsix')), /successfully installed/i);
    repo = sampleRepo('py-calc');
    server = await startCodeServer(dirs, repo.dir, { FORGE_STATE_DIR: join(work, 'state'), FORGE_CELLD_ENABLED: '' });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server.url}?folder=${encodeURIComponent(repo.dir)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    repo?.cleanup();
    other?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const palette = (command: string, on: Page = page) => runFromPalette(on, command);

  it('shows the chosen provider, its health and the model in the status bar once the runner is up', async () => {
    const item = page.locator('.statusbar-item', { hasText: /Forge: host ✓/ });
    await item.waitFor({ timeout: 60_000 });
    assert.match(await item.innerText(), /Forge: host ✓ · replay$/);
    await shot('workbench-status-bar');
    await closeWalkthrough(page);
  });

  it('runs "Forge: Fix Issue in Cells" from the command palette with a multi-line issue written in the draft; the Attempts view shows the winner', async () => {
    await palette('Forge: Fix Issue in Cells');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Write or paste the issue' }).waitFor();
    await shot('issue-source-pick');
    await page.keyboard.press('Enter');
    const startFix = page.locator('.editor-actions a[aria-label*="Start Fix"]');
    await startFix.waitFor({ timeout: 30_000 });
    await page.locator('.monaco-editor .view-line', { hasText: '<!-- Forge: write the issue above' }).waitFor();
    // Ctrl+Enter in the draft is Start Fix too; an empty draft is refused in one line and stays open.
    await page.keyboard.press('Control+Enter');
    await page.locator('.notifications-toasts', { hasText: /Forge: the issue is empty/ }).waitFor({ timeout: 30_000 });
    await page.locator('.monaco-editor .view-line', { hasText: '<!-- Forge: write the issue above' }).waitFor();
    await page.locator('.monaco-editor textarea').first().focus();
    // The sample's one-line issue under a short title: if the newlines were lost, the run's title would be all of it.
    const lines = [
      'average() is wrong',
      '',
      ...readFileSync(join(SAMPLES, 'py-calc', 'issue.md'), 'utf8')
        .trim()
        .split('\n'),
    ];
    for (const [i, line] of lines.entries()) {
      if (i > 0) await page.keyboard.press('Enter');
      if (line) await page.keyboard.insertText(line);
    }
    await page.locator('.monaco-editor .view-line', { hasText: 'returns 2.0 instead of 3.0' }).waitFor();
    // VS Code names an untitled document after its first line: the draft's tab shows the title.
    const tab = page.locator('.tabs-container .tab', { hasText: 'average() is wrong' });
    await tab.waitFor();
    await shot('issue-draft');
    await startFix.click();
    // The draft closes without asking to save it.
    await tab.waitFor({ state: 'detached', timeout: 30_000 });
    assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'no save prompt');
    // No draft tab of any name is left behind (issue 27: "Untitled-N" tabs piled up).
    assert.equal(await page.locator('.tabs-container .tab', { hasText: /Untitled-\d|<!-- Forge:/ }).count(), 0, 'no draft tab left');
    await page
      .locator('.notifications-toasts', { hasText: /Forge: "average\(\) is wrong" \(4 attempts, host cells\)/ })
      .waitFor({ timeout: 30_000 });
    await shot('progress-notification');
    await page.locator('.activitybar .action-item a[aria-label^="Forge"]').click();
    const winner = page.locator('.pane', { hasText: 'Attempts' }).locator('.monaco-list-row', { hasText: /winner/ });
    await winner.waitFor({ timeout: 240_000 });
    await page.locator('.notifications-toasts', { hasText: /Forge: fixed/ }).waitFor({ timeout: 60_000 });
    await shot('attempts-winner');
    const rows = await page.locator('.pane', { hasText: 'Attempts' }).locator('.monaco-list-row').allInnerTexts();
    assert.ok(
      rows.some((r) => /^average\(\) is wrong\s*(?:[A-Z][a-z]{2} \d{1,2} )?\d\d:\d\d · fixed/.test(r)),
      `the run is titled by the issue's first line, then its start time: ${rows.join(' | ')}`,
    );
    assert.ok(
      rows.some((r) => /attempt \d/.test(r) && /red/.test(r)),
      `a red attempt is listed: ${rows.join(' | ')}`,
    );
    const cells = await page.locator('.pane', { hasText: 'Cells' }).locator('.monaco-list-row').allInnerTexts();
    assert.ok(
      cells.some((c) => /baseline/.test(c) && /exit [1-9]/.test(c)),
      `the failing baseline cell is listed: ${cells.join(' | ')}`,
    );
  });

  it('opens Attempt details in a webview with the verdict and turns', async () => {
    await page
      .locator('.pane', { hasText: 'Attempts' })
      .locator('.monaco-list-row', { hasText: /winner/ })
      .click();
    const frame = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
    const title = frame.locator('[data-testid="attempt-title"]');
    await title.waitFor({ timeout: 30_000 });
    assert.match(await title.innerText(), /Attempt \d+\s*winner/);
    assert.match(await frame.locator('[data-testid="verdict"]').innerText(), /green: \d+ passed, 0 failed/);
    // py-calc's winner ran its tests on its finished tree (turn 3, as Turns shows it): that run is its verdict (issue 29).
    assert.match(await frame.locator('[data-testid="verdict-reused"]').innerText(), /Verdict reused from turn 3's run_tests/);
    assert.ok(Number((await frame.locator('[data-testid="turns"]').innerText()).split(' ')[0]) >= 1);
    await shot('attempt-details');
  });

  it("a second window on another repository lists none of the first one's runs and cannot Apply into it", async () => {
    // What a new user's npm package looks like before `npm install`: the test tool is missing.
    other = makeRepo({
      'package.json': JSON.stringify({ name: 'tiny-lint', version: '1.0.0', scripts: { test: 'eslint-forge-missing .' } }, null, 2),
      'index.js': 'module.exports = (a, b) => a - b;\n',
      'ISSUE.md': '# subtract() should add\n\nsubtract(2, 3) returns -1; it should return 5.\n',
    });
    page2 = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    await page2.goto(`${server!.url}?folder=${encodeURIComponent(other.dir)}`);
    await page2.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
    await page2.locator('.statusbar-item', { hasText: /Forge: host ✓/ }).waitFor({ timeout: 60_000 });
    await page2.locator('.activitybar .action-item a[aria-label^="Forge"]').click();
    const attempts = page2.locator('.pane', { hasText: 'Attempts' });
    // No run of this window: the welcome with its Fix Issue button, saying the others are hidden.
    await attempts.getByText(/Runs of repositories not open in this window are hidden/).waitFor({ timeout: 30_000 });
    await attempts.locator('.monaco-button', { hasText: 'Fix Issue in Cells' }).waitFor();
    assert.equal(await attempts.locator('.monaco-list-row', { hasText: /fixed/ }).count(), 0, 'the py-calc run is not listed here');
    const before = readFileSync(join(repo.dir, 'calc.py'), 'utf8');
    // The palette does not even offer it: nothing of this window's repositories waits for review.
    await page2.keyboard.press('F1');
    await page2.locator('.quick-input-widget input').fill('>Forge:');
    const listed = page2.locator('.quick-input-list .monaco-list-row');
    await listed.filter({ hasText: 'Fix Issue in Cells' }).first().waitFor({ timeout: 15_000 });
    const offered = await listed.allInnerTexts();
    assert.ok(!offered.some((t) => /Apply Winning Attempt|Review Winning Attempt/.test(t)), `offered: ${offered.join(' | ')}`);
    await shot('second-window-cannot-apply', page2);
    await page2.keyboard.press('Escape');
    assert.equal(readFileSync(join(repo.dir, 'calc.py'), 'utf8'), before, 'the first repository is untouched');
  });

  it('a repository whose test tool is missing, its issue from a file in the Explorer: the run ends with the cause in words and a button that opens the right setting', async () => {
    const p = page2!;
    await p.keyboard.press('Escape');
    // The issue from a file, through the Explorer's context menu.
    await p.locator('.activitybar .action-item a[aria-label^="Explorer"]').click();
    await p.locator('.explorer-folders-view .monaco-list-row', { hasText: 'ISSUE.md' }).click({ button: 'right' });
    const fromFile = p.locator('.monaco-menu .action-item', { hasText: 'Fix Issue from File...' });
    await fromFile.waitFor({ timeout: 30_000 });
    // The menu fades in: a click while it is still half drawn was lost once under load. Wait
    // until its animations have finished (state, not time).
    // (A string: tsx would wrap a function's inner names in a helper the page does not have.)
    // VS Code may draw context menus in a shadow root.
    await p.waitForFunction(`(() => {
      const roots = [document];
      for (let i = 0; i < roots.length; i++)
        for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
      const menu = roots.map((r) => r.querySelector('.monaco-menu-container')).find(Boolean);
      return !!menu && menu.getAnimations({ subtree: true }).every((a) => a.playState === 'finished');
    })()`);
    await shot('explorer-fix-issue-from-file', p);
    await fromFile.click();
    const toast = p.locator('.notifications-toasts .notification-toast', { hasText: /could not run on the base commit/ });
    await toast.waitFor({ timeout: 180_000 });
    await toast.getByRole('button', { name: 'Edit Test Command' }).waitFor();
    assert.match(await toast.innerText(), /eslint-forge-missing: command not found/);
    await shot('environment-broken', p);
    await toast.getByRole('button', { name: 'Edit Test Command' }).click();
    await p.locator('.settings-editor').waitFor({ timeout: 30_000 });
    await p
      .locator('.settings-editor .setting-item-contents', { hasText: /Test Command/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await shot('edit-test-command', p);
    const rows = await p.locator('.pane', { hasText: 'Attempts' }).locator('.monaco-list-row').allInnerTexts();
    assert.ok(
      rows.some((r) => /subtract\(\) should add/.test(r) && /failed/.test(r)),
      `the failed run is listed in its own window: ${rows.join(' | ')}`,
    );
    await p.close();
    page2 = undefined;
  });

  it('reviews the winner as a multi-file diff from the palette', async () => {
    await palette('Forge: Review Winning Attempt');
    await page.locator('.multiDiffEditor, .multi-diff-editor, .monaco-diff-editor').first().waitFor({ timeout: 30_000 });
    await page.locator('.editor-actions a[aria-label*="Apply Winning Attempt"]').waitFor({ timeout: 30_000 });
    await shot('review-diff');
    await page.keyboard.press('Control+K');
    await page.keyboard.press('Control+W');
  });

  it('reviews a green attempt that did not win (View Diff on its row) and applies it from the editor title', async () => {
    const before = readFileSync(join(repo.dir, 'calc.py'), 'utf8');
    assert.match(before, /len\(values\) \+ 1/);
    const row = page.locator('.pane', { hasText: 'Attempts' }).locator('.monaco-list-row', { hasText: /attempt 3/ });
    assert.match(await row.innerText(), /green/);
    await row.hover();
    await row.locator('.action-label[aria-label="View Diff"]').click();
    await page.locator('.multiDiffEditor, .multi-diff-editor, .monaco-diff-editor').first().waitFor({ timeout: 30_000 });
    await page.locator('.tabs-container .tab', { hasText: /Forge: attempt 3 of/ }).waitFor({ timeout: 30_000 });
    const apply = page.locator('.editor-actions a[aria-label*="Apply This Attempt"]');
    await apply.waitFor({ timeout: 30_000 });
    await shot('review-attempt-3');
    await apply.click();
    const dialog = page.locator('.monaco-dialog-box', { hasText: /Apply attempt 3 instead of the winner\? Its tests were green/ });
    await dialog.waitFor({ timeout: 30_000 });
    await shot('apply-attempt-3-asks');
    await dialog.getByRole('button', { name: 'Apply This Attempt' }).click();
    await page.locator('.notifications-toasts', { hasText: /Applied attempt 3/ }).waitFor({ timeout: 30_000 });
    await shot('applied-attempt-3');
    const after = readFileSync(join(repo.dir, 'calc.py'), 'utf8');
    assert.doesNotMatch(after, /len\(values\) \+ 1/);
    assert.match(after, /raise ValueError/);
  });

  it("the repository's own .forgeinclude is asked about before the issue, in words; Allow records that content for the runner", async () => {
    // The repository commits a list of files to copy into every attempt: its word, not the user's.
    writeFileSync(join(repo.dir, '.forgeinclude'), 'local.json\n');
    const g = (...args: string[]) =>
      execFileSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', ...args]);
    g('add', '--', '.forgeinclude');
    g('commit', '-q', '-m', 'forgeinclude', '--', '.forgeinclude');
    await palette('Forge: Fix Issue in Cells');
    const question = page.locator('.monaco-dialog-box', { hasText: /own \.forgeinclude asks Forge to copy or share files/ });
    await question.waitFor({ timeout: 30_000 });
    assert.match(await question.innerText(), /copies "local\.json" into every attempt/);
    await shot('preflight-repository-files');
    await question.getByRole('button', { name: 'Allow' }).click();
    // calc.py still carries the applied attempt: the next question is the tracked changes; stop there.
    const dirty = page.locator('.monaco-dialog-box', { hasText: /uncommitted changes to 1 tracked path/ });
    await dirty.waitFor({ timeout: 30_000 });
    await dirty.getByRole('button', { name: 'Cancel' }).click();
    await dirty.waitFor({ state: 'detached', timeout: 30_000 });
    const shown = JSON.parse(
      execFileSync(process.execPath, [join(ROOT, 'dist', 'runner.js'), 'trust', '--repo', repo.dir, '--show', '--json'], {
        env: { ...process.env, FORGE_STATE_DIR: join(work, 'state') },
        encoding: 'utf8',
      }),
    ) as { files: { file: string; confirmed: boolean }[] };
    assert.equal(shown.files.find((f) => f.file === '.forgeinclude')?.confirmed, true, JSON.stringify(shown));
  });

  it('cancel stops a run and greys what it stopped; Resume continues it to a fix', async () => {
    // A model that is slow on the first try: its first command sleeps.
    const fixing = readFileSync(join(SAMPLES, 'py-calc', 'replay.json'), 'utf8');
    writeFileSync(
      modelFile,
      JSON.stringify({ version: 1, attempts: [[{ tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 120' } }] }]] }),
    );
    await palette('Forge: Fix Issue in Cells');
    // calc.py carries the applied attempt: the pre-flight asks before anything is typed.
    const dirty = page.locator('.monaco-dialog-box', { hasText: /uncommitted changes to 1 tracked path/ });
    await dirty.waitFor({ timeout: 30_000 });
    await shot('preflight-tracked-changes');
    await dirty.getByRole('button', { name: 'Continue from HEAD' }).click();
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Write or paste the issue' }).waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.editor-actions a[aria-label*="Start Fix"]').waitFor({ timeout: 30_000 });
    await page.locator('.monaco-editor textarea').first().focus();
    await page.keyboard.insertText('average() of two numbers is wrong (cancel then resume)');
    await page.locator('.editor-actions a[aria-label*="Start Fix"]').click();
    const cells = page.locator('.pane', { hasText: 'Cells' });
    await cells
      .locator('.monaco-list-row', { hasText: /agent's command/ })
      .first()
      .waitFor({ timeout: 120_000 });
    const progress = page.locator('.notifications-toasts .notification-toast', {
      hasText: /Forge: "average\(\) of two numbers.*" \(\d+ attempts, host cells\)/,
    });
    await progress.getByRole('button', { name: 'Cancel' }).click();
    const cancelled = page.locator('.notifications-toasts .notification-toast', { hasText: /run cancelled/ });
    await cancelled.waitFor({ timeout: 60_000 });
    const attempts = page.locator('.pane', { hasText: 'Attempts' });
    await attempts
      .locator('.monaco-list-row', { hasText: /cancel then resume/ })
      .filter({ hasText: /cancelled/ })
      .waitFor({ timeout: 30_000 });
    const rows = await attempts.locator('.monaco-list-row').allInnerTexts();
    assert.ok(
      rows.some((r) => /attempt 0/.test(r) && /cancelled/.test(r)),
      `the stopped attempt is cancelled, not red: ${rows.join(' | ')}`,
    );
    await shot('cancelled');
    writeFileSync(modelFile, fixing);
    await cancelled.getByRole('button', { name: 'Resume' }).click();
    await page.locator('.notifications-toasts', { hasText: /Forge: fixed/ }).waitFor({ timeout: 240_000 });
    await shot('resumed-fixed');
  });

  it('status bar still reports health and no cells running after the run', async () => {
    // The last run's cells end a moment after its toast: wait for the count, never for time.
    const item = page.locator('.statusbar-item', { hasText: /Forge: host ✓ · replay$/ }).first();
    await item.waitFor({ timeout: 60_000 });
    assert.match(await item.innerText(), /Forge: host ✓ · replay$/);
    await shot('final');
  });
});
