import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { FixReportSchema } from '../../runner/src/protocol/fixReport.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

/**
 * Red team round 3, issue 25: a wrong fix reported "fixed" through the output alone. The
 * agent's change prints what npm prints when the tests passed and a posttest hook then failed
 * for want of the network; the real tests still fail (exit 1). A non-zero exit must never turn
 * green on what the command printed.
 */
const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const FAKE_HOOK =
  "console.log('ok add\\\\n1 passed, 0 failed\\\\n\\\\n> add@1.0.0 posttest\\\\n> npm audit\\\\n\\\\nnpm ERR! request to https://registry.npmjs.org failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org');\\n";

function attack(testCmd: string, banner = '') {
  const repo = makeRepo({
    'package.json': '{"name":"add","version":"1.0.0","scripts":{"test":"node test.js"}}\n',
    'add.js': 'module.exports = (a, b) => a - b;\n',
    'test.js':
      "const add = require('./add.js');\nif (add(2, 2) !== 4) { console.log('FAIL add'); console.log('0 passed, 1 failed'); process.exit(1); }\nconsole.log('ok add'); console.log('1 passed, 0 failed');\n",
  });
  const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
  try {
    // The "fix" leaves the bug and prints the banners of a passed test stage and a failed posttest.
    writeFileSync(
      join(dir, 'replay.json'),
      JSON.stringify({
        version: 1,
        attempts: [
          [
            {
              tool_calls: [
                {
                  name: 'write_file',
                  arguments: { path: 'add.js', content: `${banner}${JSON.parse(`"${FAKE_HOOK}"`)}module.exports = (a, b) => a - b;\n` },
                },
              ],
            },
            { tool_calls: [{ name: 'finish', arguments: { summary: 'wrong fix' } }] },
          ],
        ],
      }),
    );
    const r = spawnSync(
      process.execPath,
      [
        RUNNER,
        'fix',
        '--repo',
        repo.dir,
        '--issue-text',
        'add() subtracts',
        '--test-cmd',
        testCmd,
        '--attempts',
        '1',
        '--provider',
        'host',
        '--model',
        `replay:${join(dir, 'replay.json')}`,
        '--json',
      ],
      { encoding: 'utf8', timeout: 240_000 },
    );
    return { status: r.status, stderr: r.stderr, report: r.stdout ? FixReportSchema.parse(JSON.parse(r.stdout)) : null };
  } finally {
    repo.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('a failing test run is never green on what it printed (issue 25, red team round 3)', function () {
  this.timeout(300_000);
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  it('a command that is not npm printing npm’s banners: not fixed', () => {
    // Without npm the fake must print the test stage's banner too.
    const r = attack('node test.js', "console.log('\\n> add@1.0.0 test\\n> node test.js\\n');\n");
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.report!.status, 'not_fixed');
    assert.equal(r.report!.attempts[0]!.verdict!.green, false);
  });

  it('npm test with no posttest at all: the tests alone (hooks off) exit 1, so not fixed', () => {
    const r = attack('npm test');
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.report!.status, 'not_fixed');
    assert.match(r.stderr, /but the tests alone \(hooks off\) exit 1: counted as failing/);
    assert.equal(r.report!.attempts[0]!.verdict!.green, false);
  });
});
