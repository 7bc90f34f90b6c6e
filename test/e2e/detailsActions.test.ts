import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { fixFromDraft, fixtureCheckout, openForgeWindow } from '../helpers/forgeWindow.js';
import { requireCodeServer, type RunningCodeServer } from '../helpers/codeServer.js';

/**
 * Issue 31 review findings in the packaged VSIX (code-server + Chromium): the attempt details
 * page has buttons that run the attempt's commands (View Diff opens its diff), and the hunk
 * picker's rows say what each hunk changes. Two attempts on test/fixtures/apply-part: attempt 0
 * makes the fixture's two hunks in calc.py, attempt 1 only the average() fix; one of them wins,
 * the other gets "Compare with Winner". Screenshots: /work/notes/shots/i31-review-*.png when
 * /work/notes exists, else test-results/e2e-details-actions.
 */
const ROOT = process.cwd();
const FIXTURE = join(ROOT, 'test', 'fixtures', 'apply-part');
const SHOTS =
  process.env.FORGE_SHOTS_DIR ?? (existsSync('/work/notes') ? '/work/notes/shots' : join(ROOT, 'test-results', 'e2e-details-actions'));

describe('attempt details buttons and hunk rows (issue 31, code-server + Chromium)', function () {
  this.timeout(600_000);
  let work: string;
  let repo: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `i31-review-${name}.png`) });
  const attemptsPane = () => page.locator('.pane', { hasText: 'Attempts' });
  const frame = () => page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');

  before(async function () {
    requireCodeServer(this);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-details-actions-'));
    repo = fixtureCheckout(join(FIXTURE, 'repo'), work);
    const fixture = JSON.parse(readFileSync(join(FIXTURE, 'replay.json'), 'utf8')) as { attempts: unknown[][] };
    const [both] = fixture.attempts;
    const fixOnly = [
      {
        tool_calls: [
          {
            name: 'edit_file',
            arguments: {
              path: 'calc.py',
              old_string: 'return sum(values) / (len(values) + 1)',
              new_string: 'return sum(values) / len(values)',
            },
          },
          { name: 'finish', arguments: { summary: 'divide by the number of values' } },
        ],
      },
    ];
    const model = join(work, 'replay.json');
    writeFileSync(model, JSON.stringify({ version: 1, attempts: [both, fixOnly] }));
    ({ server, browser, page } = await openForgeWindow(work, repo, { 'forge.model': `replay:${model}`, 'forge.attempts': 2 }));
    await fixFromDraft(page, 'average() is wrong', '');
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !page) return;
    await page.screenshot({ path: join(SHOTS, `i31-review-failed-${Date.now()}.png`) });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("the details page of the attempt that did not win offers its actions; View Diff opens that attempt's diff", async () => {
    const other = attemptsPane().locator('.monaco-list-row', { hasText: /attempt \d\s*green/ });
    await other.waitFor({ timeout: 60_000 });
    const index = /attempt (\d)/.exec(await other.innerText())![1]!;
    await other.click();
    await frame()
      .locator('[data-testid="attempt-title"]', { hasText: `Attempt ${index}` })
      .waitFor({ timeout: 30_000 });
    const button = (action: string) => frame().locator(`vscode-button[data-action="${action}"]`);
    for (const action of ['viewDiff', 'apply', 'applyPart', 'compareWithWinner']) {
      await button(action).waitFor();
      assert.equal(await button(action).getAttribute('disabled'), null, `${action} is enabled`);
    }
    // The panel's tab names the run by its issue and time, not its id.
    const tab = page.locator('.tabs-container .tab', { hasText: `Attempt ${index} · average() is wrong` });
    await tab.waitFor();
    assert.doesNotMatch(await tab.innerText(), /run-\d/);
    assert.doesNotMatch(await frame().locator('.sub').first().innerText(), /run-\d/);
    await shot('details-actions');
    await button('viewDiff').click();
    await page.locator('.tabs-container .tab', { hasText: `Forge: attempt ${index} of average() is wrong` }).waitFor({ timeout: 30_000 });
  });

  it('Apply Part… from the page lists hunks by lines and first changed line, the file named once', async () => {
    await page.locator('.tabs-container .tab', { hasText: /^Attempt \d · / }).click();
    await frame().locator('vscode-button[data-action="applyPart"]').click();
    const rows = page.locator('.quick-input-list .monaco-list-row', { hasText: /lines? \d+(–\d+)?: \+\d+ −\d+/ });
    await rows.first().waitFor({ timeout: 30_000 });
    const texts = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    assert.ok(texts.length >= 1, texts.join(' | '));
    // No raw header; the file's name only once (VS Code draws a group's separator inside its first row).
    for (const t of texts) assert.doesNotMatch(t, /@@/, t);
    assert.ok(
      texts.some((t) => /[−+] return sum\(values\)/.test(t)),
      `a row previews its first changed line: ${texts.join(' | ')}`,
    );
    // The file is named once, by its separator.
    const listText = await page.locator('.quick-input-list').innerText();
    assert.equal(listText.split('calc.py').length - 1, 1, listText);
    assert.doesNotMatch(await page.locator('.quick-input-title').innerText(), /run-\d/);
    await shot('hunk-rows');
    await page.keyboard.press('Escape');
  });
});
