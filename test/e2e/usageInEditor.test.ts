import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { sampleRepo } from '../helpers/sampleRepo.js';

/**
 * Time and tokens per attempt in a real VS Code (issue 31): the packaged VSIX in code-server,
 * a replay model whose turns report usage, real host cells. Attempt 0 fixes the bug in one turn;
 * attempt 1 runs the tests twice, then spends more than forge.maxRunTokens in one turn (less than
 * its own --max-tokens) and is stopped before its next one: "budget", its change still there to review. Screenshots go to
 * $FORGE_SHOTS_DIR (default test-results/e2e-usage) as i31-usage-*.png.
 */
const SHOTS = process.env.FORGE_SHOTS_DIR ?? join(process.cwd(), 'test-results', 'e2e-usage');
const ROOT = process.cwd();
const OLD = 'return sum(values) / (len(values) + 1)';

describe('time and tokens in the editor (issue 31, code-server + Chromium)', function () {
  this.timeout(600_000);
  let work: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let repo: { dir: string; cleanup: () => void };
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `i31-usage-${name}.png`) });

  before(async function () {
    requireCodeServer(this);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-usage-'));
    const modelFile = join(work, 'model.json');
    const edit = (to: string) => ({ name: 'edit_file', arguments: { path: 'calc.py', old_string: OLD, new_string: to } });
    writeFileSync(
      modelFile,
      JSON.stringify({
        version: 1,
        attempts: [
          // One turn: the fix and finish together (checked against the budget once, before anything is spent).
          [
            {
              tool_calls: [edit('return sum(values) / len(values)'), { name: 'finish', arguments: { summary: 'fixed' } }],
              usage: { input: 12_000, output: 400 },
            },
          ],
          [
            { tool_calls: [{ name: 'run_tests', arguments: {} }], usage: { input: 3_000, output: 100 } },
            { tool_calls: [{ name: 'run_tests', arguments: {} }], usage: { input: 3_500, output: 100 } },
            { tool_calls: [edit('return sum(values) // len(values)')], usage: { input: 150_000, output: 5_000 } },
            { tool_calls: [{ name: 'finish', arguments: { summary: 'never reached' } }], usage: { input: 1, output: 1 } },
          ],
        ],
      }),
    );
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
    const dirs = prepareUserData(work, {
      'forge.model': `replay:${modelFile}`,
      'forge.attempts': 2,
      'forge.provider': 'host',
      'forge.maxRunTokens': 100_000,
      // The user's own price for this model (the key is their forge.model value).
      'forge.modelPrices': { [`replay:${modelFile}`]: { inputPerMTok: 3, outputPerMTok: 15 } },
    });
    assert.match(installExtension(dirs, join(ROOT, 'forge-cells-0.1.0.vsix')), /successfully installed/i);
    repo = sampleRepo('py-calc');
    server = await startCodeServer(dirs, repo.dir, { FORGE_STATE_DIR: join(work, 'state'), FORGE_CELLD_ENABLED: '' });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server.url}?folder=${encodeURIComponent(repo.dir)}`);
    await page.locator('.statusbar-item', { hasText: /Forge: host ✓/ }).waitFor({ timeout: 120_000 });
    await closeWalkthrough(page);
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    repo?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const attemptsPane = () => page.locator('.pane', { hasText: 'Attempts' });

  it('each attempt shows its turns, tokens and time; the run its totals; an attempt over the run budget is "budget"', async () => {
    await runFromPalette(page, 'Forge: Fix Issue in Cells');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Write or paste the issue' }).waitFor();
    await page.keyboard.press('Enter');
    const start = page.locator('.editor-actions a[aria-label*="Start Fix"]');
    await start.waitFor({ timeout: 30_000 });
    await page.locator('.monaco-editor textarea').first().focus();
    await page.keyboard.insertText('average() of two numbers is wrong');
    await page.locator('.monaco-editor .view-line', { hasText: 'average() of two numbers is wrong' }).waitFor();
    await start.click();
    await page.locator('.activitybar .action-item a[aria-label^="Forge"]').click();
    const winner = attemptsPane().locator('.monaco-list-row', { hasText: /winner/ });
    await winner.waitFor({ timeout: 240_000 });
    const budget = attemptsPane().locator('.monaco-list-row', { hasText: /attempt 1\s*budget/ });
    await budget.waitFor({ timeout: 60_000 });
    // The run row gets its totals with its snapshot.
    const runRow = attemptsPane().locator('.monaco-list-row', { hasText: /average\(\) of two numbers is wrong.*fixed.*tok/ });
    await runRow.waitFor({ timeout: 60_000 });
    // A wider side bar, so the screenshot shows whole rows (the user can drag it too).
    const bar = await page.locator('.part.sidebar').boundingBox();
    if (bar) {
      await page.mouse.move(bar.x + bar.width + 1, bar.y + 300);
      await page.mouse.down();
      await page.mouse.move(bar.x + 720, bar.y + 300, { steps: 5 });
      await page.mouse.up();
    }
    await shot('attempts-view');
    const w = (await winner.innerText()).replace(/\s+/g, ' ');
    assert.match(w, /attempt 0\s*winner · 1 turn · 12k tok · \d+(\.\d)? s|attempt 0\s*winner · 1 turn · 12k tok · \d+ min/, w);
    const b = (await budget.innerText()).replace(/\s+/g, ' ');
    // Three turns paid for (3.1k + 3.6k + 155k: under its own 200k), then the run's 100k were spent
    // (with attempt 0's 12.4k): stopped before the fourth; its change is there.
    assert.match(b, /attempt 1\s*budget · 3 turns · 162k tok · .* · \+\d+ −\d+/, b);
    const run = (await runRow.innerText()).replace(/\s+/g, ' ');
    assert.match(run, /174k tok/, run);
    // The tooltip has the whole line, with the cost at the user's price.
    await budget.hover();
    const hover = page
      .locator('.monaco-hover, .custom-hover, .workbench-hover')
      .filter({ hasText: /in \/ .* out/ })
      .first();
    await hover.waitFor({ timeout: 30_000 });
    const tip = (await hover.innerText()).replace(/\s+/g, ' ');
    assert.match(tip, /budget \(the run's tokens spent; tests red\)/, tip);
    assert.match(tip, /3 turns, 157k in \/ 5\.2k out, cost ~0\.5\d/, tip);
    await shot('budget-tooltip');
  });

  it('the attempt details page shows its time, tokens and cost, and says why it stopped', async () => {
    await attemptsPane()
      .locator('.monaco-list-row', { hasText: /attempt 1\s*budget/ })
      .click();
    const frame = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
    await frame.locator('[data-testid="attempt-title"]').waitFor({ timeout: 30_000 });
    assert.match(await frame.locator('[data-testid="attempt-title"]').innerText(), /Attempt 1\s*budget/);
    assert.match(await frame.locator('[data-testid="time"]').innerText(), /^\d+(\.\d)? s \(cells \d+(\.\d)? s\)$|min/);
    assert.match(await frame.locator('[data-testid="tokens"]').innerText(), /157k in \/ 5\.2k out · cost ~0\.5\d at your prices/);
    assert.match(await frame.locator('[data-testid="budget"]').innerText(), /The run's token budget \(shared by its attempts\) ran out/);
    await shot('attempt-details');
  });
});
