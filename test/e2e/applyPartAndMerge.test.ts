import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { fixFromDraft, fixtureCheckout, openForgeWindow } from '../helpers/forgeWindow.js';
import { requireCodeServer, runFromPalette, type RunningCodeServer } from '../helpers/codeServer.js';
import { waitFor } from '../helpers/waitFor.js';

/**
 * Apply part of an attempt, and apply into a checkout that changed, in the packaged VSIX in
 * code-server + Chromium. The replay (test/fixtures/apply-part) makes one attempt with two
 * hunks in calc.py: the average() fix (line 3) and a docstring (line 22).
 */
const ROOT = process.cwd();
const FIXTURE = join(ROOT, 'test', 'fixtures', 'apply-part');
const SHOTS = process.env.FORGE_SHOTS_DIR ?? join(ROOT, 'test-results', 'e2e-apply');

describe('Apply part of an attempt and merge into a changed checkout (code-server)', function () {
  this.timeout(600_000);
  let work: string;
  let repo: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `i31-apply-${name}.png`) });
  const calc = () => readFileSync(join(repo, 'calc.py'), 'utf8');
  const toast = (text: RegExp) => page.locator('.notifications-toasts .notification-toast', { hasText: text });
  const runRow = (text: RegExp) => page.locator('.pane', { hasText: 'Attempts' }).locator('.monaco-list-row', { hasText: text });

  before(async function () {
    requireCodeServer(this);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-apply-'));
    repo = fixtureCheckout(join(FIXTURE, 'repo'), work);
    ({ server, browser, page } = await openForgeWindow(work, repo, {
      'forge.model': `replay:${join(FIXTURE, 'replay.json')}`,
      'forge.attempts': 1,
    }));
    // A run from an issue written in the draft; its one attempt wins.
    await fixFromDraft(page, 'average() is wrong', 'average([2, 4]) returns 2.0 instead of 3.0.');
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !page) return;
    await page.screenshot({ path: join(SHOTS, `i31-apply-failed-${Date.now()}.png`) });
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

  it('a hunk applied alone leaves the other hunks out', async () => {
    const base = calc();
    // From the attempt's context menu in the Attempts view.
    const row = page.locator('.pane', { hasText: 'Attempts' }).locator('.monaco-list-row', { hasText: /winner/ });
    await row.click({ button: 'right' });
    const item = page.locator('.monaco-menu .action-item', { hasText: 'Apply Part of Attempt...' });
    await item.waitFor({ timeout: 30_000 });
    await page.waitForFunction(`(() => {
      const roots = [document];
      for (let i = 0; i < roots.length; i++)
        for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
      const menu = roots.map((r) => r.querySelector('.monaco-menu-container')).find(Boolean);
      return !!menu && menu.getAnimations({ subtree: true }).every((a) => a.playState === 'finished');
    })()`);
    await item.click();
    const hunks = page.locator('.quick-input-list .monaco-list-row', { hasText: /lines? \d+(–\d+)?: \+\d+ −\d+/ });
    await hunks.nth(1).waitFor({ timeout: 30_000 });
    assert.equal(await hunks.count(), 2, 'two hunks are offered');
    await page.locator('.quick-input-list', { hasText: 'calc.py' }).waitFor();
    // The diff button of the second hunk opens the file's diff, the picker stays.
    await hunks.nth(1).hover();
    await hunks.nth(1).locator('.action-label.codicon-diff').click();
    await page.locator('.monaco-diff-editor .view-line', { hasText: 'The value as text.' }).first().waitFor({ timeout: 30_000 });
    await shot('hunk-picker-with-diff');
    await hunks.nth(1).click();
    await page.locator('.quick-input-list .monaco-list-row[aria-checked="true"]').waitFor();
    await shot('hunk-picked');
    await page.locator('.quick-input-widget input').first().press('Enter');
    await toast(/Applied 1 chosen part\(s\).*left out 1/).waitFor({ timeout: 30_000 });
    await shot('hunk-applied');
    const now = calc();
    assert.match(now, /"""The value as text\."""/, 'the chosen hunk is applied');
    assert.match(now, /len\(values\) \+ 1/, 'the other hunk is left out');
    assert.equal(now, base.replace('"""value as text"""', '"""The value as text."""'));
    // The run still waits for review (the rest can be applied later) and says a part is in the checkout.
    await page
      .locator('.pane', { hasText: 'Attempts' })
      .locator('.monaco-list-row', { hasText: /winner/ })
      .waitFor();
    await runRow(/fixed · partly applied/).waitFor({ timeout: 30_000 });
  });

  it('a conflicting apply opens the merge editor and leaves the checkout consistent', async () => {
    // The user edits the line the attempt changes.
    const mine = calc().replace('return sum(values) / (len(values) + 1)', 'return sum(values) / max(len(values), 1)');
    writeFileSync(join(repo, 'calc.py'), mine);
    await runFromPalette(page, 'Forge: Apply Winning Attempt');
    const warning = toast(/Where it conflicts with your edits \(calc\.py\) your lines are kept/);
    await warning.waitFor({ timeout: 30_000 });
    // Rendered, with its conflict counted: the state in which VS Code's merge editor once reset a
    // file holding conflict markers to the base's lines and saved that over the user's edit.
    await page
      .locator('.merge-editor')
      .getByText(/\d+ Conflicts? Remaining/)
      .waitFor({ timeout: 60_000 });
    await shot('merge-editor');
    assert.equal(
      calc(),
      mine,
      'where it conflicts the file keeps the user lines while the merge editor is open (the rest was applied by the part)',
    );
    // The whole change is merged in: the run is applied, not left looking untouched.
    await runRow(/fixed · applied/).waitFor({ timeout: 30_000 });
    // Closed without resolving: nothing is written over the user's edit.
    await runFromPalette(page, 'View: Close Editor');
    await page.locator('.merge-editor').first().waitFor({ state: 'detached', timeout: 30_000 });
    assert.equal(await page.locator('.tabs-container .tab.dirty').count(), 0, 'no editor holds unsaved text');
    assert.equal(calc(), mine, 'closing the merge editor unresolved leaves the user edit');
    assert.doesNotMatch(calc(), /<<<<<<<|>>>>>>>/);
    // Undo Apply puts back exactly the bytes the checkout held (here: what it still holds).
    await warning.getByRole('button', { name: 'Undo Apply' }).click();
    const dialog = page.locator('.monaco-dialog-box', { hasText: /Undo the apply\?/ });
    await dialog.waitFor({ timeout: 30_000 });
    await dialog.getByRole('button', { name: 'Undo Apply' }).click();
    await toast(/Forge: undone; restored calc\.py/).waitFor({ timeout: 30_000 });
    await shot('undone');
    assert.equal(calc(), mine, 'the checkout is exactly as it was before the apply');
    await runRow(/fixed · partly applied/).waitFor({ timeout: 30_000 });
  });

  it('a conflict resolved in the merge editor and saved leaves the file merged, without markers', async () => {
    const mine = calc();
    assert.match(mine, /max\(len\(values\), 1\)/, 'the checkout still holds the edit the last test restored');
    await runFromPalette(page, 'Forge: Apply Winning Attempt');
    await page.locator('.merge-editor').first().waitFor({ timeout: 60_000 });
    await page.locator('.merge-editor').getByText('Accept Attempt 0', { exact: true }).first().waitFor({ timeout: 30_000 });
    // Every change of the attempt's side (your file is the result: its clean changes too), as a
    // user taking the attempt's version would: the attempt pane's "accept all" action.
    await page.locator('.merge-editor a.action-label[aria-label="Accept All Current Changes from Right"]').click();
    // Complete Merge is the git extension's button (for git's own merges): here the result is saved, as any editor.
    await page.locator('.merge-editor').getByText('0 Conflicts Remaining').waitFor({ timeout: 30_000 });
    await shot('merge-resolved');
    await page.locator('.merge-editor .monaco-editor .view-line', { hasText: 'def clamp' }).last().click();
    await page.keyboard.press('Control+S');
    // Wait for the saved file itself: the checkout already held no markers (the user's version was
    // kept), so only the attempt's line arriving says the save happened (it truncates, then writes).
    await waitFor(() => /return sum\(values\) \/ len\(values\)\n/.test(calc()), 30_000, 'the merge result saved to calc.py');
    const done = calc();
    assert.doesNotMatch(done, /<<<<<<<|=======|>>>>>>>/);
    assert.match(done, /return sum\(values\) \/ len\(values\)\n/);
    assert.match(done, /The value as text\./);
    await shot('merge-completed');
  });
});
