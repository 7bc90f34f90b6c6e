import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium, prepareUserData, requireCodeServer, type RunningCodeServer, startCodeServer } from '../helpers/codeServer.js';

/**
 * The extension-host suite (test/extension-host/suite.ts, against the real `vscode` API) run
 * in code-server's extension host the way VS Code's own browser integration tests do it: the
 * workbench URL's payload names extensionDevelopmentPath and extensionTestsPath. The suite
 * writes its outcome to a file this driver reads.
 */
const ROOT = process.cwd();

describe('extension-host suite in code-server (extensionDevelopmentPath + extensionTestsPath)', function () {
  this.timeout(600_000);
  let work: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;

  before(function () {
    requireCodeServer(this);
    if (!existsSync(join(ROOT, 'dist-test', 'extension-host', 'index.cjs')))
      throw new Error('dist-test/ is missing: run npm run build first');
    work = mkdtempSync(join(tmpdir(), 'forge-exthost-'));
  });
  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('passes every test of the suite', async () => {
    const results = join(work, 'results.json');
    const dirs = prepareUserData(work, {});
    server = await startCodeServer(dirs, work, {
      FORGE_STATE_DIR: join(work, 'state'),
      FORGE_CELLD_ENABLED: '',
      FORGE_EXTENSION_HOST_RESULTS: results,
      FORGE_SAMPLES: join(ROOT, 'samples'),
    });
    const remote = (path: string) => `vscode-remote://${server!.host}${path}`;
    const payload = JSON.stringify([
      ['extensionDevelopmentPath', remote(ROOT)],
      ['extensionTestsPath', remote(join(ROOT, 'dist-test', 'extension-host', 'index.cjs'))],
      ['skipWelcome', 'true'],
    ]);
    browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(`${server.url}?folder=${encodeURIComponent(work)}&payload=${encodeURIComponent(payload)}`);
    const end = Date.now() + 400_000;
    while (!existsSync(results)) {
      if (Date.now() > end) throw new Error(`the suite wrote no results; code-server log tail: ${server.log().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const outcome = JSON.parse(readFileSync(results, 'utf8')) as {
      failures: number;
      passed: string[];
      failed: { title: string; error: string }[];
    };
    assert.deepEqual(outcome.failed, [], 'no failures');
    assert.equal(outcome.failures, 0);
    assert.ok(outcome.passed.length >= 2, `tests ran: ${outcome.passed.join('; ')}`);
  });
});
