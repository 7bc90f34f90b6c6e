import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import {
  closeWalkthrough,
  installExtension,
  launchChromium,
  prepareUserData,
  runFromPalette,
  type RunningCodeServer,
  startCodeServer,
} from './codeServer.js';
import { git } from './gitRepo.js';

const ROOT = process.cwd();

/** The fixture's files as a user's checkout: a git repository with one commit, at `work`/repo. */
export function fixtureCheckout(fixtureRepo: string, work: string): string {
  const repo = join(work, 'repo');
  cpSync(fixtureRepo, repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '-m', 'base');
  return repo;
}

export interface ForgeWindow {
  server: RunningCodeServer;
  browser: Browser;
  page: Page;
}

/**
 * The packaged VSIX in a fresh code-server with these user settings (the host provider unless
 * they say otherwise), `repo` opened in Chromium, waited until Forge's status bar says its
 * provider is healthy, the first-run walkthrough closed: the window every e2e suite starts from.
 */
export async function openForgeWindow(work: string, repo: string, settings: Record<string, unknown>): Promise<ForgeWindow> {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
  const dirs = prepareUserData(work, { 'forge.provider': 'host', ...settings });
  assert.match(installExtension(dirs, join(ROOT, 'forge-cells-0.1.0.vsix')), /successfully installed/i);
  const server = await startCodeServer(dirs, repo, { FORGE_STATE_DIR: join(work, 'state'), FORGE_CELLD_ENABLED: '' });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${server.url}?folder=${encodeURIComponent(repo)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
  const provider = String(settings['forge.provider'] ?? 'host');
  await page.locator('.statusbar-item', { hasText: new RegExp(`Forge: ${provider} ✓`) }).waitFor({ timeout: 60_000 });
  await closeWalkthrough(page);
  return { server, browser, page };
}

/** Fix Issue in Cells from the issue draft (a title line and a body), then the Forge view until its run has a winner. */
export async function fixFromDraft(page: Page, title: string, body: string): Promise<void> {
  await runFromPalette(page, 'Forge: Fix Issue in Cells');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Write or paste the issue' }).waitFor();
  await page.keyboard.press('Enter');
  const startFix = page.locator('.editor-actions a[aria-label*="Start Fix"]');
  await startFix.waitFor({ timeout: 30_000 });
  await page.locator('.monaco-editor textarea').first().focus();
  await page.keyboard.insertText(title);
  await page.keyboard.press('Enter');
  await page.keyboard.press('Enter');
  await page.keyboard.insertText(body);
  await startFix.click();
  await page.locator('.activitybar .action-item a[aria-label^="Forge"]').click();
  await page
    .locator('.pane', { hasText: 'Attempts' })
    .locator('.monaco-list-row', { hasText: /winner/ })
    .waitFor({ timeout: 240_000 });
}
