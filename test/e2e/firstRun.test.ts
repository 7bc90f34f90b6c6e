import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import {
  installExtension,
  launchChromium,
  prepareUserData,
  requireCodeServer,
  runFromPalette,
  type RunningCodeServer,
  startCodeServer,
} from '../helpers/codeServer.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';

/**
 * A new user's first window, in the packaged VSIX in code-server + Chromium: the Get Started
 * walkthrough opens by itself once, the activity bar shows our icon, the status bar the chosen
 * provider and model, and the empty views offer a way forward (Fix Issue in Cells, even with
 * another repository's run in the store; the durable instances guide). Screenshots to
 * /work/notes/shots/i31-firstrun-*.png when that directory's parent exists, else test-results/e2e-first-run/.
 */
const ROOT = process.cwd();
const SHOTS = process.env.FORGE_SHOTS_DIR ?? join(ROOT, 'test-results', 'e2e-first-run');
const WALKTHROUGH_TITLE = 'Get Started with Forge Cells';

describe('first run in VS Code (packaged VSIX in code-server + Chromium)', function () {
  this.timeout(600_000);
  let work: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let repo: { dir: string; cleanup: () => void } | undefined;
  let other: { dir: string; cleanup: () => void } | undefined;
  const shot = async (name: string) => {
    await page.screenshot({ path: join(SHOTS, `i31-firstrun-${name}.png`) });
  };
  const forgeViews = () => page.locator('.activitybar .action-item a[aria-label^="Forge"]');
  const pane = (title: string) => page.locator('.pane', { has: page.locator('.pane-header', { hasText: title }) });

  before(async function () {
    requireCodeServer(this);
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-first-'));
    const state = join(work, 'state');
    // A run of another repository, made by the CLI into the store this window's runner reads:
    // the Attempts view of this window has none of its own to list, and hides that one.
    other = sampleRepo('py-calc');
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'dist', 'runner.js'),
        'fix',
        '--repo',
        other.dir,
        '--issue-file',
        join(SAMPLES, 'py-calc', 'issue.md'),
        '--model',
        `replay:${join(SAMPLES, 'py-calc', 'replay.json')}`,
        '--attempts',
        '1',
        '--provider',
        'host',
      ],
      { cwd: ROOT, stdio: 'pipe', env: { ...process.env, FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '' } },
    );
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
    // A new user's settings: a model and where cells run, nothing else of Forge's.
    const dirs = prepareUserData(work, {
      'forge.model': 'openai:gpt-4o',
      'forge.provider': 'host',
      'workbench.welcomePage.walkthroughs.openOnInstall': true,
    });
    assert.match(installExtension(dirs, join(ROOT, 'forge-cells-0.1.0.vsix')), /successfully installed/i);
    repo = sampleRepo('js-slug');
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
    other?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('opens the Get Started walkthrough on the first window after install (the workbench opens none itself here)', async () => {
    // code-server runs with --disable-getting-started-override and workbench.startupEditor none:
    // what opens, the extension opened.
    await page.locator('.gettingStartedContainer').getByText(WALKTHROUGH_TITLE).first().waitFor({ timeout: 120_000 });
    for (const step of ['Choose a model', 'Choose where cells run', 'Fix an issue', 'Review the winner'])
      await page.locator('.gettingStartedContainer').getByText(step, { exact: true }).first().waitFor();
    // The step's page (media/walkthrough/model.md) renders in a webview: wait for its heading.
    await page
      .frameLocator('.gettingStartedContainer iframe')
      .frameLocator('iframe')
      .getByText('forge.model', { exact: false })
      .first()
      .waitFor({ timeout: 60_000 });
    await shot('walkthrough');
  });

  it('shows the chosen provider, its health and the model in the status bar', async () => {
    const item = page.locator('.statusbar-item', { hasText: /Forge: host ✓ · gpt-4o/ });
    await item.waitFor({ timeout: 120_000 });
    assert.match((await item.innerText()).trim(), /^Forge: host ✓ · gpt-4o$/);
    // Other providers (docker, qemu, swarm) are not this user's concern: only in Show Cell Health.
    assert.doesNotMatch(await item.innerText(), /docker|qemu|swarm/);
  });

  it('has an activity-bar icon of its own, and the Attempts view offers Fix Issue in Cells with only another repository run in the store', async () => {
    const mask = await forgeViews().evaluate((el) => {
      const s = getComputedStyle(el);
      return `${s.getPropertyValue('mask-image')} ${s.getPropertyValue('-webkit-mask-image')}`;
    });
    assert.match(mask, /media(\/|%2F)forge\.svg/, `the Forge container's icon: ${mask}`);
    await forgeViews().click();
    const attempts = pane('Attempts');
    await attempts.getByText(/Runs of repositories not open in this window are hidden/).waitFor({ timeout: 60_000 });
    // The welcome's button (the view's title bar has a beaker action of the same name).
    await attempts.locator('.monaco-button', { hasText: 'Fix Issue in Cells' }).waitFor();
    assert.equal(await attempts.locator('.monaco-list-row').count(), 0, "the other repository's run is not listed");
    await shot('attempts-and-icon');
  });

  it('the empty Instances view says what durable instances are, with a button that opens the guide', async () => {
    const instances = pane('Instances');
    const header = instances.locator('.pane-header');
    if ((await header.getAttribute('aria-expanded')) !== 'true') await header.click();
    await instances.getByText(/durable instance is a long-lived runtime/).waitFor({ timeout: 30_000 });
    await shot('instances');
    await instances.getByRole('button', { name: 'Open the Durable Instances Guide' }).click();
    await page.locator('.tabs-container .tab', { hasText: /instances\.md/ }).waitFor({ timeout: 60_000 });
  });

  it('does not open the walkthrough again after a reload; "Forge: Get Started" reopens it', async () => {
    // Keyboard focus away from the guide's preview (a webview takes F1 for itself).
    await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').click();
    await runFromPalette(page, 'View: Close All Editors');
    await page.locator('.tabs-container .tab').first().waitFor({ state: 'detached', timeout: 30_000 });
    // Reloaded as a user does (the workbench saves its state first; page.reload() may not let it).
    await Promise.all([page.waitForEvent('load', { timeout: 120_000 }), runFromPalette(page, 'Developer: Reload Window')]);
    await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
    // The runner answering its health check comes well after activation and the first-run timer.
    await page.locator('.statusbar-item', { hasText: /Forge: host ✓ · gpt-4o/ }).waitFor({ timeout: 120_000 });
    await page.locator('.statusbar-item', { hasText: /Forge: host ✓/ }).click();
    // The health document opening shows the editor area has settled with what activation opened.
    await page
      .locator('.tabs-container .tab', { hasText: /health/i })
      .first()
      .waitFor({ timeout: 60_000 });
    const tabs = await page.locator('.tabs-container .tab').allInnerTexts();
    await shot('after-reload');
    assert.ok(!tabs.some((t) => /Walkthrough|Welcome|Forge Cells/.test(t)), `the walkthrough did not open again: tabs ${tabs.join(' | ')}`);
    await runFromPalette(page, 'Forge: Get Started');
    await page.locator('.gettingStartedContainer').getByText(WALKTHROUGH_TITLE).first().waitFor({ timeout: 60_000 });
  });

  it('a chosen provider that does not work here is named with ✗ on a warning background', async () => {
    // Swarm needs a swarm manager; without one (this machine's usual state) the user who chose it sees why.
    const health = JSON.parse(
      execFileSync(process.execPath, [join(ROOT, 'dist', 'runner.js'), 'health', '--json'], {
        encoding: 'utf8',
        env: { ...process.env, FORGE_STATE_DIR: join(work, 'health-state'), FORGE_CELLD_ENABLED: '' },
      }),
    ) as { providers: { provider: string; available: boolean; reason: string }[] };
    const swarm = health.providers.find((p) => p.provider === 'swarm')!;
    // forge.provider is machine-scoped: on a remote (code-server) it is read from the machine's settings.
    mkdirSync(join(work, 'user-data', 'Machine'), { recursive: true });
    writeFileSync(join(work, 'user-data', 'Machine', 'settings.json'), JSON.stringify({ 'forge.provider': 'swarm' }));
    const item = page.locator('.statusbar-item', { hasText: /Forge: swarm [✓✗] · gpt-4o/ });
    await item.waitFor({ timeout: 60_000 });
    assert.match((await item.innerText()).trim(), swarm.available ? /^Forge: swarm ✓ · gpt-4o$/ : /^Forge: swarm ✗ · gpt-4o$/);
    if (!swarm.available) {
      assert.match((await item.getAttribute('class')) ?? '', /warning-kind/);
    }
    await shot('status-chosen-provider');
  });
});
