import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { edit, npmPackage, type ToolCall } from '../helpers/fixCli.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { SAMPLES, sampleRepo } from '../helpers/sampleRepo.js';

/**
 * Issue 27 in a real VS Code (code-server + Chromium, the packaged VSIX): runs that overlap on
 * one machine, a test runner that crashes, endings that say why, coloured logs, and a window
 * closed mid-run. The runner is started with a budget of two cells so that two runs really
 * queue for the machine. Screenshots land in test-results/e2e-overlap/.
 */
const SHOTS = join(process.cwd(), 'test-results', 'e2e-overlap');
const ROOT = process.cwd();
const RUNNER = join(ROOT, 'dist', 'runner.js');

/** A replay script: one attempt per entry, each its turns' tool calls, then "done". */
const replay = (attempts: ToolCall[][][]) =>
  JSON.stringify({ version: 1, attempts: attempts.map((turns) => [...turns.map((tool_calls) => ({ tool_calls })), { content: 'done' }]) });

// An npm package whose tests print colours whatever NO_COLOR says (as some tools do), and
// whose test runner dies before any result, the way a starved vitest does, when crash.js says so.
const CALC = {
  'package.json': npmPackage('calc', { test: 'node run-tests.js' }),
  'calc.js': 'exports.add = (a, b) => a - b;\n',
  'crash.js': 'module.exports = false;\n',
  'run-tests.js':
    "if (require('./crash.js')) { console.error('RangeError: WebAssembly.instantiate(): Out of memory: Cannot allocate Wasm memory for new instance'); process.exit(1); }\n" +
    "const { add } = require('./calc.js');\nconst ok = add(2, 2) === 4;\nconsole.log('TAP version 13');\n" +
    "console.log(ok ? '\\u001b[32mok 1 - add\\u001b[39m' : '\\u001b[31mnot ok 1 - add\\u001b[39m');\n" +
    "console.log('1..1');\nconsole.log(`\\u001b[1m# pass ${ok ? 1 : 0}\\u001b[22m`);\nconsole.log(`# fail ${ok ? 0 : 1}`);\nprocess.exit(ok ? 0 : 1);\n",
};
const ESC = String.fromCharCode(27);
const FIX = edit('calc.js', 'a - b', 'a + b');
const CRASH = edit('crash.js', 'false', 'true');
const WRONG = edit('calc.js', 'a - b', 'a / b');

describe('VS Code extension when runs overlap and fail (issue 27, code-server + Chromium)', function () {
  this.timeout(600_000);
  let work: string;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let py: { dir: string; cleanup: () => void };
  let calc: { dir: string; cleanup: () => void };
  let modelFile = '';
  let step = 0;
  const shot = async (name: string) => {
    step += 1;
    await page.screenshot({ path: join(SHOTS, `${String(step).padStart(2, '0')}-${name}.png`) });
  };
  const open = async (folder: string) => {
    await page?.close({ runBeforeUnload: true }).catch(() => undefined);
    page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server!.url}?folder=${encodeURIComponent(folder)}`);
    await page.locator('.statusbar-item', { hasText: /Forge: host ✓/ }).waitFor({ timeout: 120_000 });
    await closeWalkthrough(page);
    await page.locator('.activitybar .action-item a[aria-label^="Forge"]').click();
  };
  const palette = (command: string) => runFromPalette(page, command);

  /** Fix Issue in Cells from the palette, the issue written in the draft, Start Fix. */
  const startFix = async (issue: string) => {
    await palette('Forge: Fix Issue in Cells');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Write or paste the issue' }).waitFor();
    await page.keyboard.press('Enter');
    const start = page.locator('.editor-actions a[aria-label*="Start Fix"]');
    await start.waitFor({ timeout: 30_000 });
    await page.locator('.monaco-editor textarea').first().focus();
    await page.keyboard.insertText(issue);
    await page.locator('.monaco-editor .view-line', { hasText: issue }).waitFor();
    await start.click();
    await page.locator('.tabs-container .tab', { hasText: issue }).waitFor({ state: 'detached', timeout: 30_000 });
  };
  const attemptsPane = () => page.locator('.pane', { hasText: 'Attempts' });
  /** The rows of the Attempts view under the run titled `title`, as "attempt N: state". */
  const attemptStates = async (title: string): Promise<string[]> => {
    const rows = await attemptsPane().locator('.monaco-list-row').allInnerTexts();
    const at = rows.findIndex((r) => r.startsWith(title));
    assert.ok(at >= 0, `a run titled ${title}: ${rows.join(' | ')}`);
    const out: string[] = [];
    for (const r of rows.slice(at + 1)) {
      const m = /^attempt (\d+)\s*(winner|green|red|could not run|cancelled|interrupted)/.exec(r.replace(/\s+/g, ' '));
      if (!m) break;
      out.push(`attempt ${m[1]}: ${m[2]}`);
    }
    return out;
  };
  /** attemptStates once `settled` holds of them (the view refreshes a moment after a toast), or the last seen after 30 s. */
  const statesOnce = async (title: string, settled: (states: string[]) => boolean): Promise<string[]> => {
    const until = Date.now() + 30_000;
    for (;;) {
      const states = await attemptStates(title).catch(() => []);
      if (settled(states) || Date.now() > until) return states;
      await page.waitForTimeout(250);
    }
  };
  /** The run row titled `title` expanded (a run's attempts show under it). */
  const expand = async (title: string) => {
    const row = attemptsPane().locator('.monaco-list-row', { hasText: title }).first();
    await row.waitFor({ timeout: 30_000 });
    if ((await row.getAttribute('aria-expanded')) === 'false') await row.click();
  };

  before(async function () {
    requireCodeServer(this);
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'forge-e2e-overlap-'));
    modelFile = join(work, 'model.json');
    copyFileSync(join(SAMPLES, 'py-calc', 'replay.json'), modelFile);
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, stdio: 'pipe' });
    const dirs = prepareUserData(work, { 'forge.model': `replay:${modelFile}`, 'forge.attempts': 4, 'forge.provider': 'host' });
    assert.match(installExtension(dirs, join(ROOT, 'forge-cells-0.1.0.vsix')), /successfully installed/i);
    py = sampleRepo('py-calc');
    calc = makeRepo(CALC);
    server = await startCodeServer(dirs, py.dir, {
      FORGE_STATE_DIR: join(work, 'state'),
      FORGE_CELLD_ENABLED: '',
      // Two cells at a time on this machine: two runs of four attempts must queue.
      FORGE_MAX_CELLS: '2',
    });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    py?.cleanup();
    calc?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('two runs started together on one repository queue for the machine, say where they stand, and end with the verdicts each gets alone', async () => {
    // Alone: the same repository, model and attempts through the CLI, on its own store.
    const alone = JSON.parse(
      execFileSync(
        process.execPath,
        [
          RUNNER,
          'fix',
          '--repo',
          py.dir,
          '--issue-text',
          'average() is wrong',
          '--attempts',
          '4',
          '--provider',
          'host',
          '--model',
          `replay:${modelFile}`,
          '--json',
        ],
        {
          env: { ...process.env, FORGE_STATE_DIR: join(work, 'alone') },
          encoding: 'utf8',
          timeout: 300_000,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      ),
    ) as {
      status: string;
      winner: { attempts: string[] } | null;
      attempts: { index: number; attempt_id: string; verdict: { green: boolean } | null }[];
    };
    assert.equal(alone.status, 'fixed');
    const expected = alone.attempts.map(
      (a) => `attempt ${a.index}: ${a.attempt_id === alone.winner?.attempts[0] ? 'winner' : a.verdict?.green ? 'green' : 'red'}`,
    );

    await open(py.dir);
    await startFix('average() run one');
    await startFix('average() run two');
    // Both runs are accepted; with two cells for eight attempts, one says it waits, and where.
    const waiting = page.locator('.notifications-toasts .notification-toast', {
      hasText: /Forge: "average\(\) run (one|two)" .*waiting for a free cell: \d+ ahead/,
    });
    await waiting.first().waitFor({ timeout: 120_000 });
    // The Attempts view says it too, on the attempt whose cell waits.
    await attemptsPane()
      .locator('.monaco-list-row', { hasText: /waiting for a cell \(\d+ ahead\)/ })
      .first()
      .waitFor({ timeout: 120_000 });
    await shot('two-runs-one-waits');
    const fixedOne = page.locator('.notifications-toasts .notification-toast', { hasText: /Forge: fixed "average\(\) run one"/ });
    const fixedTwo = page.locator('.notifications-toasts .notification-toast', { hasText: /Forge: fixed "average\(\) run two"/ });
    await fixedOne.waitFor({ timeout: 300_000 });
    await fixedTwo.waitFor({ timeout: 300_000 });
    await shot('two-runs-fixed');
    for (const title of ['average() run one', 'average() run two']) {
      await expand(title);
      const states = await statesOnce(title, (s) => s.length === expected.length && s.some((x) => /winner/.test(x)));
      assert.deepEqual(states, expected, `${title} against the run alone`);
    }
  });

  it('a window closed mid-run shows the run interrupted on reopen, with a notification that offers Resume', async () => {
    writeFileSync(modelFile, replay([[[{ name: 'run_command', arguments: { command: 'sleep 120' } }]]]));
    await startFix('average() closed mid-run');
    await page
      .locator('.pane', { hasText: 'Cells' })
      .locator('.monaco-list-row', { hasText: /agent's command/ })
      .filter({ hasText: /running/ })
      .first()
      .waitFor({ timeout: 120_000 });
    await shot('before-close');
    // Closing the window ends its extension host and with it the runner.
    await open(py.dir);
    const toast = page.locator('.notifications-toasts .notification-toast', {
      hasText: /Forge: "average\(\) closed mid-run" was interrupted/,
    });
    await toast.waitFor({ timeout: 120_000 });
    await toast.getByRole('button', { name: 'Resume' }).waitFor();
    const row = attemptsPane().locator('.monaco-list-row', { hasText: 'average() closed mid-run' }).first();
    await row.waitFor({ timeout: 30_000 });
    assert.match(await row.innerText(), /interrupted/);
    assert.doesNotMatch(await row.innerText(), /cancelled/);
    await shot('interrupted-on-reopen');
  });

  it('an attempt whose test runner crashes shows "could not run" and is not ranked; the coloured log renders without escape codes', async () => {
    writeFileSync(modelFile, replay([[[FIX]], [[CRASH]], [[WRONG]], [[FIX]]]));
    await open(calc.dir);
    await startFix('add() subtracts');
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: /Forge: fixed "add\(\) subtracts"/ })
      .waitFor({ timeout: 300_000 });
    await expand('add() subtracts');
    const states = await statesOnce('add() subtracts', (s) => s.length === 4 && s.some((x) => /winner/.test(x)));
    assert.equal(states[1], 'attempt 1: could not run', states.join(' | '));
    assert.equal(states[2], 'attempt 2: red', states.join(' | '));
    assert.ok(states[0] === 'attempt 0: winner' || states[3] === 'attempt 3: winner', states.join(' | '));
    await shot('could-not-run');

    // The winner's details: its test output in colour, not as codes.
    await attemptsPane()
      .locator('.monaco-list-row', { hasText: /winner/ })
      .first()
      .click();
    const frame = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
    await frame.locator('[data-testid="attempt-title"]').waitFor({ timeout: 30_000 });
    // The ranking places attempt 1 nowhere among the failing: it is said apart, with its cause.
    const ranking = await frame.locator('[data-testid="ranking"]').innerText();
    assert.match(ranking, /Not ranked: attempt 1: the tests could not run \(WebAssembly memory could not be reserved/);
    assert.doesNotMatch(ranking, /#\d: attempt 1\b/);
    // Its test log, opened: the colours as colours, no code shown.
    const log = frame.locator('vscode-collapsible', { hasText: /Log: verdict/ }).last();
    await log.click();
    const passing = log.locator('pre span[style*="color"]', { hasText: 'ok 1 - add' });
    await passing.waitFor({ timeout: 30_000 });
    const text = await log.locator('pre').innerText();
    assert.match(text, /# pass 1/);
    assert.ok(!text.includes(ESC) && !/␛|\[3\dm|\[39m|\[1m/.test(text), `no escape code shows in Attempt details: ${text}`);
    await shot('details-coloured');

    // A cell log opened from the Cells view: plain text (the red attempt's verdict: its log has failures).
    const cell = page
      .locator('.pane', { hasText: 'Cells' })
      .locator('.monaco-list-row', { hasText: /^verdict tests · attempt 2(?!\d)/ })
      .first();
    await cell.waitFor({ timeout: 30_000 });
    await cell.click();
    await page
      .locator('.monaco-editor .view-line', { hasText: /#\sfail\s\d/ })
      .first()
      .waitFor({ timeout: 30_000 });
    const lines = await page.locator('.monaco-editor .view-lines').last().innerText();
    assert.ok(!lines.includes(ESC) && !/␛|\[3\dm|\[39m|\[1m/.test(lines), `no escape code in the log: ${lines.slice(0, 400)}`);
    await shot('cell-log-plain');
  });

  it('a run that is not fixed says why attempt by attempt, and its button opens the test log at the cause', async () => {
    writeFileSync(modelFile, replay([[[CRASH]], [[WRONG]], [[WRONG]], [[CRASH]]]));
    await startFix('add() still subtracts');
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: /Forge: not fixed "add\(\) still subtracts"/ });
    await toast.waitFor({ timeout: 300_000 });
    const text = await toast.innerText();
    assert.match(text, /its tests could not run: WebAssembly memory could not be reserved/);
    assert.match(text, /"add" still fails/);
    await shot('not-fixed-says-why');
    await toast.getByRole('button', { name: 'Open Test Log' }).click();
    // The log opens with the cause selected: the selection sits on the failing test's line.
    const cause = page.locator('.monaco-editor .view-line', { hasText: /not\sok\s1\s-\sadd/ }).first();
    await cause.waitFor({ timeout: 30_000 });
    const selected = page.locator('.monaco-editor .selected-text').first();
    await selected.waitFor({ timeout: 30_000 });
    // The editor re-renders its lines while it reveals the selection: the state waited for is
    // the two standing on one line, read in the page (not one read in the middle of a scroll).
    const onOneLine = await page
      .waitForFunction(
        () => {
          const line = Array.from(document.querySelectorAll('.monaco-editor .view-line')).find((l) =>
            /not\sok\s1\s-\sadd/.test(l.textContent ?? ''),
          );
          const sel = document.querySelector('.monaco-editor .selected-text');
          if (!line || !sel) return false;
          return Math.abs(line.getBoundingClientRect().top - sel.getBoundingClientRect().top) < 4;
        },
        undefined,
        { timeout: 30_000 },
      )
      .then(
        () => true,
        () => false,
      );
    const [a, b] = [await cause.boundingBox(), await selected.boundingBox()];
    assert.ok(onOneLine, `the selection (${b?.y}) is on the cause's line (${a?.y})`);
    await shot('log-at-cause');
  });
});
