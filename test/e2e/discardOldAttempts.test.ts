import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { openStore } from '../../runner/src/store/openStore.js';
import {
  installExtension,
  launchChromium,
  prepareUserData,
  requireCodeServer,
  runFromPalette,
  type RunningCodeServer,
  startCodeServer,
} from '../helpers/codeServer.js';
import { git } from '../helpers/gitRepo.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';

/**
 * Branch hygiene (issue 31) in the packaged VSIX in code-server + Chromium: a real fix run
 * (replay model, host cells) leaves its winner branch unreviewed; the store dates it two
 * hours back and the retention is 0.01 days (about 14 minutes), so the window offers it
 * once, and Discard Old Attempts lists it, confirms, and removes the branch.
 */
const SHOTS = process.env.FORGE_SHOTS_DIR ?? join(process.cwd(), 'test-results', 'e2e-hygiene');
const ROOT = process.cwd();
const RUNNER = join(ROOT, 'dist', 'runner.js');

describe('Forge: Discard Old Attempts (packaged VSIX in code-server + Chromium)', function () {
  this.timeout(600_000);
  let work: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let repo: { dir: string; cleanup: () => void };
  let runId = '';
  let step = 0;
  const shot = async (name: string) => {
    step += 1;
    // A toast still sliding in is half drawn: wait for its animation to end.
    const sliding = page.locator('.notifications-toasts .notification-toast.notification-fade-in:not(.notification-fade-in-done)');
    await sliding
      .first()
      .waitFor({ state: 'detached', timeout: 5_000 })
      .catch(() => undefined);
    await page.screenshot({ path: join(SHOTS, `i31-hygiene-${String(step).padStart(2, '0')}-${name}.png`) });
  };
  const forgeBranches = () => git(repo.dir, 'branch', '--list', 'forge/*', '--format=%(refname:short)').split('\n').filter(Boolean);

  before(async function () {
    requireCodeServer(this);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-hygiene-'));
    const state = join(work, 'state');
    repo = sampleRepo('py-calc');
    // A real run, never reviewed: its winner branch stays in the repository.
    const fix = spawnSync(
      process.execPath,
      [
        RUNNER,
        'fix',
        '--repo',
        repo.dir,
        '--issue-text',
        readFileSync(join(SAMPLES, 'py-calc', 'issue.md'), 'utf8'),
        '--attempts',
        '2',
        '--provider',
        'host',
        '--model',
        `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
        '--json',
      ],
      { encoding: 'utf8', timeout: 240_000, env: { ...process.env, FORGE_STATE_DIR: state } },
    );
    assert.equal(fix.status, 0, fix.stderr);
    const report = JSON.parse(fix.stdout) as { run_id: string; status: string };
    assert.equal(report.status, 'fixed');
    runId = report.run_id;
    assert.deepEqual(forgeBranches(), [`forge/attempt/${runId}-a0`]);
    // Aged in the store: it ended two hours ago.
    const db = openStore(join(state, 'forge.db'));
    const then = new Date(Date.now() - 2 * 3600_000).toISOString();
    db.prepare('UPDATE runs SET created_at = ?, updated_at = ? WHERE id = ?').run(then, then, runId);
    db.close();

    execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
    const dirs = prepareUserData(work, {
      'forge.model': `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
      'forge.provider': 'host',
      'forge.attemptRetentionDays': 0.01,
    });
    assert.match(installExtension(dirs, join(ROOT, 'forge-cells-0.1.0.vsix')), /successfully installed/i);
    server = await startCodeServer(dirs, repo.dir, { FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '' });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server.url}?folder=${encodeURIComponent(repo.dir)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    repo?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('offers the old unreviewed run once when the window opens, without removing anything', async () => {
    const toast = page.locator('.notifications-toasts .notification-toast', {
      hasText: /Forge: 1 run not reviewed for more than 14m still has 1 forge\/attempt branch/,
    });
    await toast.waitFor({ timeout: 120_000 });
    await shot('window-offer');
    assert.deepEqual(forgeBranches(), [`forge/attempt/${runId}-a0`], 'the offer removes nothing');
    await toast.locator('.monaco-button', { hasText: 'Review List' }).click();
  });

  it('lists it in a multi-select pick, all picked; after the confirmation its branch is gone', async () => {
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: /2h old · 1 branch/ });
    await row.waitFor({ timeout: 60_000 });
    const text = await row.innerText();
    assert.match(text, /average/i, text);
    assert.match(text, new RegExp(runId), text);
    await page.locator('.quick-input-widget', { hasText: 'Discard Old Attempts' }).waitFor();
    // Picked from the start: the row is a checked checkbox (VS Code's list gives it role checkbox and aria-checked).
    assert.equal(await row.getAttribute('aria-checked'), 'true');
    await shot('quick-pick');
    await page.keyboard.press('Enter');
    const dialog = page.locator('.monaco-dialog-box', { hasText: /Discard 1 run and delete 1 branch with any worktree left\?/ });
    await dialog.waitFor({ timeout: 30_000 });
    await shot('confirm');
    assert.deepEqual(forgeBranches(), [`forge/attempt/${runId}-a0`], 'nothing goes before the confirmation');
    await dialog.locator('.monaco-button', { hasText: 'Discard' }).click();
    await page
      .locator('.notifications-toasts', { hasText: /Forge: discarded 1 old run: 1 branch and 0 worktrees removed\./ })
      .waitFor({ timeout: 60_000 });
    await shot('discarded');
    assert.deepEqual(forgeBranches(), []);
    assert.equal(git(repo.dir, 'status', '--porcelain'), '');
  });

  it('from the palette again: nothing is left to offer', async () => {
    await runFromPalette(page, 'Forge: Discard Old Attempts...');
    await page
      .locator('.notifications-toasts', { hasText: /Forge: no attempts left unreviewed for more than 14m/ })
      .waitFor({ timeout: 30_000 });
    await shot('nothing-left');
  });

  it("is in the Attempts view's overflow menu", async () => {
    await page.locator('.activitybar .action-item a[aria-label^="Forge"]').click();
    const pane = page.locator('.pane', { hasText: 'Attempts' }).first();
    await pane.locator('.pane-header').hover();
    await pane.locator('.pane-header .action-label[aria-label="More Actions..."]').click();
    const item = page.locator('.monaco-menu .action-item', { hasText: 'Discard Old Attempts...' });
    await item.waitFor({ timeout: 30_000 });
    await shot('attempts-view-menu');
    await item.click();
    await page
      .locator('.notifications-toasts', { hasText: /Forge: no attempts left unreviewed/ })
      .first()
      .waitFor({ timeout: 30_000 });
  });
});
