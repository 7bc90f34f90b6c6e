import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { fixFromDraft, fixtureCheckout, openForgeWindow } from '../helpers/forgeWindow.js';
import { requireCodeServer, runFromPalette, type RunningCodeServer } from '../helpers/codeServer.js';

/**
 * Apply with an unsaved editor of a file it changes, in the packaged VSIX in code-server +
 * Chromium (auto-save off). Apply writes the files on disk: without the check, the editor kept
 * the user's unsaved text over the attempt's version and saving it later wiped the change while
 * the run said applied. Now a modal names the file: Cancel applies nothing, Save and Apply saves
 * it and merges the attempt with the user's edit. The replay (test/fixtures/apply-part) changes
 * calc.py at line 3 and line 22; the user edits line 12, far from both (a clean merge).
 */
const ROOT = process.cwd();
const FIXTURE = join(ROOT, 'test', 'fixtures', 'apply-part');
const SHOTS = process.env.FORGE_SHOTS_DIR ?? join(ROOT, 'test-results', 'e2e-apply-unsaved');

describe('Apply with an unsaved editor of a file it changes (code-server)', function () {
  this.timeout(600_000);
  let work: string;
  let repo: string;
  let base: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `i31-dirty-${name}.png`) });
  const calc = () => readFileSync(join(repo, 'calc.py'), 'utf8');
  const toast = (text: RegExp) => page.locator('.notifications-toasts .notification-toast', { hasText: text });
  const dirtyTab = () => page.locator('.tabs-container .tab.dirty', { hasText: 'calc.py' });
  const modal = () => page.locator('.monaco-dialog-box', { hasText: /calc\.py has unsaved changes/ });
  const USER_DOC = '"""Sum of the numbers. Typed by the user."""';

  before(async function () {
    requireCodeServer(this);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-unsaved-'));
    repo = fixtureCheckout(join(FIXTURE, 'repo'), work);
    base = calc();
    ({ server, browser, page } = await openForgeWindow(work, repo, {
      'forge.model': `replay:${join(FIXTURE, 'replay.json')}`,
      'forge.attempts': 1,
      // The user's edit must stay unsaved until Forge asks (the drive that found the bug had it off).
      'files.autoSave': 'off',
    }));
    // A run from an issue written in the draft; its one attempt wins.
    await fixFromDraft(page, 'average() is wrong', 'average([2, 4]) returns 2.0 instead of 3.0.');

    // The user opens calc.py and types into line 12 without saving.
    await runFromPalette(page, 'Go to File...');
    const input = page.locator('.quick-input-widget input');
    await input.fill('calc.py');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'calc.py' }).first().waitFor();
    await page.keyboard.press('Enter');
    const line = page.locator('.editor-instance .monaco-editor .view-line', { hasText: '"""Sum of the numbers."""' });
    await line.waitFor({ timeout: 30_000 });
    await line.click();
    // Typed before the closing quotes (typing quotes would meet the editor's auto-closing).
    await page.keyboard.press('End');
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowLeft');
    await page.keyboard.insertText(' Typed by the user.');
    await dirtyTab().waitFor({ timeout: 30_000 });
    assert.equal(calc(), base, 'the edit is only in the editor');
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !page) return;
    await page.screenshot({ path: join(SHOTS, `i31-dirty-failed-${Date.now()}.png`) });
    console.log(
      await page
        .locator('.notifications-toasts')
        .allInnerTexts()
        .catch(() => []),
    );
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('Cancel in the modal applies nothing and leaves the editor as the user had it', async () => {
    await runFromPalette(page, 'Forge: Apply Winning Attempt');
    await modal().waitFor({ timeout: 30_000 });
    await shot('save-modal');
    await modal().getByRole('button', { name: 'Cancel' }).click();
    await modal().waitFor({ state: 'detached', timeout: 30_000 });
    assert.equal(calc(), base, 'the disk is unchanged');
    assert.equal(await dirtyTab().count(), 1, 'the editor still holds the unsaved edit');
    await page.locator('.editor-instance .monaco-editor .view-line', { hasText: USER_DOC }).waitFor();
    // Nothing was applied: the run still waits for review.
    await page
      .locator('.pane', { hasText: 'Attempts' })
      .locator('.monaco-list-row', { hasText: /winner/ })
      .waitFor();
  });

  it('Apply Part of Attempt asks too, after the hunks are chosen; Cancel applies nothing', async () => {
    await runFromPalette(page, 'Forge: Apply Part of Attempt...');
    const hunks = page.locator('.quick-input-list .monaco-list-row', { hasText: /lines? \d+(–\d+)?: \+\d+ −\d+/ });
    await hunks.nth(1).waitFor({ timeout: 30_000 });
    await hunks.nth(0).click();
    await page.locator('.quick-input-list .monaco-list-row[aria-checked="true"]').waitFor();
    await page.locator('.quick-input-widget input').first().press('Enter');
    await modal().waitFor({ timeout: 30_000 });
    await modal().getByRole('button', { name: 'Cancel' }).click();
    await modal().waitFor({ state: 'detached', timeout: 30_000 });
    assert.equal(calc(), base, 'the disk is unchanged');
    assert.equal(await dirtyTab().count(), 1, 'the editor still holds the unsaved edit');
  });

  it('Save and Apply saves the edit, then merges the attempt with it; the editor shows the result, not dirty', async () => {
    await runFromPalette(page, 'Forge: Apply Winning Attempt');
    await modal().waitFor({ timeout: 30_000 });
    await modal().getByRole('button', { name: 'Save and Apply' }).click();
    await toast(/Applied the winner to .*calc\.py/).waitFor({ timeout: 60_000 });
    const now = calc();
    assert.ok(now.includes(USER_DOC), "the user's edit is on disk");
    assert.match(now, /return sum\(values\) \/ len\(values\)\n/, "the attempt's fix is merged in");
    assert.match(now, /"""The value as text\."""/, "the attempt's other hunk is merged in");
    assert.doesNotMatch(now, /<<<<<<<|>>>>>>>/);
    assert.equal(
      now,
      base
        .replace('"""Sum of the numbers."""', USER_DOC)
        .replace('(len(values) + 1)', 'len(values)')
        .replace('"""value as text"""', '"""The value as text."""'),
    );
    // The editor (saved, so VS Code reloads it from disk) shows the merged file and holds nothing unsaved.
    await page
      .locator('.editor-instance .monaco-editor .view-line', { hasText: 'return sum(values) / len(values)' })
      .first()
      .waitFor({ timeout: 30_000 });
    assert.equal(await dirtyTab().count(), 0, 'the editor is not dirty');
    await shot('saved-and-applied');
  });
});
