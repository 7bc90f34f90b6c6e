import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { FixReportSchema } from '../../runner/src/protocol/fixReport.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { handOverToCellUser } from '../../runner/src/cells/cellUser.js';
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

  it('npm test with no posttest at all: the printed hook is no hook of the base commit, so not fixed', () => {
    const r = attack('npm test');
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.report!.status, 'not_fixed');
    assert.match(r.stderr, /the base commit's package.json has no posttest script: counted as failing/);
    assert.equal(r.report!.attempts[0]!.verdict!.green, false);
  });

  it('a posttest that fails because the change broke a local server (connect ECONNREFUSED 127.0.0.1) is not a missing network: not fixed (red team round 4)', () => {
    const repo = makeRepo({
      'package.json': JSON.stringify({
        name: 'greet',
        version: '1.0.0',
        private: true,
        scripts: { test: 'node --test test/', posttest: 'node e2e.js' },
      }),
      'greet.js': "function greet(name) { return 'hello ' + name.toLowerCase(); }\nmodule.exports = { greet };\n",
      'server.js':
        "const http = require('http');\nconst { greet } = require('./greet');\nhttp.createServer((req, res) => res.end(greet(decodeURIComponent(req.url.slice(1))))).listen(Number(process.env.PORT || 3456), '127.0.0.1');\n",
      'e2e.js':
        "const { spawn } = require('child_process'); const http = require('http');\nconst child = spawn(process.execPath, [__dirname + '/server.js'], { stdio: 'inherit' });\nsetTimeout(() => { http.get('http://127.0.0.1:3456/Bob', (res) => { let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => { child.kill(); if (b !== 'hello Bob') { console.error('e2e FAIL: got', b); process.exit(1); } console.log('e2e ok'); }); }).on('error', (e) => { console.error('e2e FAIL:', e.message); child.kill(); process.exit(1); }); }, 800);\n",
    });
    mkdirSync(join(repo.dir, 'test'));
    writeFileSync(
      join(repo.dir, 'test', 'greet.test.js'),
      "const test = require('node:test'); const assert = require('assert');\nconst { greet } = require('../greet');\ntest('keeps case', () => assert.strictEqual(greet('Bob'), 'hello Bob'));\n",
    );
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'add', '-A']);
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-qm', 'test']);
    handOverToCellUser(repo.dir);
    const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
    try {
      // The unit fix is right; the same change moves the server's port, which the posttest's e2e check needs.
      writeFileSync(
        join(dir, 'replay.json'),
        JSON.stringify({
          version: 1,
          attempts: [
            [
              {
                tool_calls: [{ name: 'edit_file', arguments: { path: 'greet.js', old_string: 'name.toLowerCase()', new_string: 'name' } }],
              },
              {
                tool_calls: [
                  {
                    name: 'edit_file',
                    arguments: { path: 'server.js', old_string: 'process.env.PORT || 3456', new_string: 'process.env.PORT || 3000' },
                  },
                ],
              },
              { tool_calls: [{ name: 'finish', arguments: { summary: 'keep the case; default port 3000' } }] },
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
          'greet() lowercases',
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
      const report = FixReportSchema.parse(JSON.parse(r.stdout));
      assert.equal(report.status, 'not_fixed', r.stderr);
      assert.equal(r.status, 1);
      assert.equal(report.attempts[0]!.verdict!.green, false);
    } finally {
      repo.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a posttest whose remote check fails for want of the network does not hide a local check the change broke (red team round 5)', () => {
    const repo = makeRepo({
      'package.json': JSON.stringify({
        name: 'slug',
        version: '1.0.0',
        private: true,
        scripts: { test: 'node --test', posttest: 'node --test e2e/local.e2e.js e2e/remote.e2e.js' },
      }),
      'slug.js': "function slugify(title) { return title.trim().toLowerCase().replace(' ', '-'); }\nmodule.exports = { slugify };\n",
      'slug.test.js':
        "const test = require('node:test'); const assert = require('node:assert'); const { slugify } = require('./slug');\ntest('runs of spaces', () => assert.strictEqual(slugify('a  b'), 'a-b'));\n",
    });
    mkdirSync(join(repo.dir, 'e2e'));
    writeFileSync(
      join(repo.dir, 'e2e', 'local.e2e.js'),
      "const test = require('node:test'); const assert = require('node:assert'); const { slugify } = require('../slug');\ntest('trims surrounding blanks (e2e)', () => assert.strictEqual(slugify('  Hello  '), 'hello'));\n",
    );
    writeFileSync(
      join(repo.dir, 'e2e', 'remote.e2e.js'),
      "const test = require('node:test');\ntest('publishes to the staging API', async () => { await fetch('https://staging.api.example.com/health').catch((e) => { throw e.cause ?? e; }); });\n",
    );
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'add', '-A']);
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-qm', 'e2e']);
    handOverToCellUser(repo.dir);
    const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
    try {
      // Runs of spaces fixed, but trim() dropped: the local e2e check fails, beside the remote one.
      writeFileSync(
        join(dir, 'replay.json'),
        JSON.stringify({
          version: 1,
          attempts: [
            [
              {
                tool_calls: [
                  {
                    name: 'edit_file',
                    arguments: {
                      path: 'slug.js',
                      old_string: "title.trim().toLowerCase().replace(' ', '-')",
                      new_string: "title.toLowerCase().replace(/\\s+/g, '-')",
                    },
                  },
                  { name: 'finish', arguments: { summary: 'runs of spaces (drops trim: wrong)' } },
                ],
              },
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
          'runs of spaces',
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
      const report = FixReportSchema.parse(JSON.parse(r.stdout));
      assert.equal(report.status, 'not_fixed', r.stderr);
      assert.match(r.stderr, /does more than ask the package registry, so its failure may be the change's/);
    } finally {
      repo.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a posttest whose script is unchanged but whose file the attempt rewrote is held against it (red team round 5)', () => {
    const repo = makeRepo({
      'package.json': JSON.stringify({
        name: 't',
        version: '1.0.0',
        private: true,
        scripts: { test: 'node --test', posttest: 'node e2e.js' },
      }),
      'trim.js': 'module.exports = (s) => s.trim();\n',
      'trim.test.js':
        "const test = require('node:test'); const assert = require('node:assert');\ntest('x', () => assert.strictEqual(require('./trim')(' a'), 'a'));\n",
      // On the base: a local check, then a remote one (which fails in a cell for want of the network).
      'e2e.js':
        "const assert = require('node:assert'); assert.strictEqual(require('./trim')('  b  '), 'b');\nfetch('https://staging.api.example.com/health').catch((e) => { console.error('Error: getaddrinfo ENOTFOUND staging.api.example.com'); process.exit(1); });\n",
    });
    const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
    try {
      // A wrong change (trim gone) and an e2e.js that only prints the network error.
      writeFileSync(
        join(dir, 'replay.json'),
        JSON.stringify({
          version: 1,
          attempts: [
            [
              {
                tool_calls: [
                  { name: 'write_file', arguments: { path: 'trim.js', content: "module.exports = (s) => s.replace(/^ /, '');\n" } },
                  {
                    name: 'write_file',
                    arguments: {
                      path: 'e2e.js',
                      content: "console.error('Error: getaddrinfo ENOTFOUND staging.api.example.com'); process.exit(1);\n",
                    },
                  },
                  { name: 'finish', arguments: { summary: 'wrong' } },
                ],
              },
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
          'trim',
          '--attempts',
          '1',
          '--provider',
          'host',
          '--test-cmd',
          'npm test',
          '--allow-green-baseline',
          '--model',
          `replay:${join(dir, 'replay.json')}`,
          '--json',
        ],
        { encoding: 'utf8', timeout: 240_000 },
      );
      assert.match(r.stderr, /its posttest \(node e2e\.js\) does more than ask the package registry/);
      assert.equal(FixReportSchema.parse(JSON.parse(r.stdout)).status, 'not_fixed', r.stderr);
    } finally {
      repo.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a posttest suite whose subtests change places (one fixed, another broken) is not the same failure (red team round 6)', () => {
    const repo = makeRepo({
      'package.json': JSON.stringify({
        name: 'slug',
        version: '1.0.0',
        private: true,
        scripts: { test: 'node --test test/', posttest: 'node --test e2e/' },
      }),
      'slug.js': "function slugify(s) { return s.trim().toLowerCase().replace(' ', '-'); }\nmodule.exports = { slugify };\n",
    });
    mkdirSync(join(repo.dir, 'test'));
    mkdirSync(join(repo.dir, 'e2e'));
    writeFileSync(
      join(repo.dir, 'test', 'slug.test.js'),
      "const test = require('node:test'); const assert = require('node:assert'); const { slugify } = require('../slug');\ntest('several words', () => assert.strictEqual(slugify('a b c'), 'a-b-c'));\n",
    );
    writeFileSync(
      join(repo.dir, 'e2e', 'release.test.js'),
      "const { describe, it } = require('node:test'); const assert = require('node:assert'); const dns = require('node:dns'); const { slugify } = require('../slug');\ndescribe('release checks', () => {\n  it('registry is reachable', async () => { await dns.promises.lookup('registry.npmjs.org'); });\n  it('README: several words', () => assert.strictEqual(slugify('Release notes for May'), 'release-notes-for-may'));\n  it('README: version numbers keep their dots', () => assert.strictEqual(slugify('v1.2 Release'), 'v1.2-release'));\n});\n",
    );
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'add', '-A']);
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-qm', 'e2e']);
    handOverToCellUser(repo.dir);
    const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
    try {
      writeFileSync(
        join(dir, 'replay.json'),
        JSON.stringify({
          version: 1,
          attempts: [
            [
              {
                tool_calls: [
                  {
                    name: 'edit_file',
                    arguments: { path: 'slug.js', old_string: ".replace(' ', '-')", new_string: ".replace(/[^a-z0-9]+/g, '-')" },
                  },
                ],
              },
              { tool_calls: [{ name: 'finish', arguments: { summary: 'every run of non-alphanumerics' } }] },
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
          'several words',
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
      assert.equal(FixReportSchema.parse(JSON.parse(r.stdout)).status, 'not_fixed', r.stderr);
      assert.match(r.stderr, /does more than ask the package registry, so its failure may be the change's/);
    } finally {
      repo.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a workspace\u2019s own posttest that the change broke is not hidden behind another workspace\u2019s npm audit (red team round 8)', () => {
    const files: Record<string, string> = {
      'package.json':
        '{\n  "name": "mono",\n  "version": "1.0.0",\n  "private": true,\n  "workspaces": [\n    "packages/*"\n  ],\n  "scripts": {\n    "test": "node --test test/ && npm test --workspaces",\n    "posttest": "npm audit --audit-level=high"\n  }\n}',
      'package-lock.json':
        '{\n  "name": "mono",\n  "version": "1.0.0",\n  "lockfileVersion": 3,\n  "requires": true,\n  "packages": {\n    "": {\n      "name": "mono",\n      "version": "1.0.0",\n      "workspaces": [\n        "packages/*"\n      ]\n    },\n    "node_modules/slug": {\n      "resolved": "packages/slug",\n      "link": true\n    },\n    "packages/slug": {\n      "version": "1.0.0"\n    },\n    "node_modules/ms": {\n      "version": "2.1.3",\n      "resolved": "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",\n      "integrity": "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==",\n      "license": "MIT"\n    },\n    "packages/web": {\n      "version": "1.0.0",\n      "dependencies": {\n        "slug": "1.0.0",\n        "ms": "2.1.3"\n      }\n    },\n    "node_modules/web": {\n      "resolved": "packages/web",\n      "link": true\n    }\n  }\n}',
      'test/slug.test.js':
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { slugify } = require('../packages/slug/src/slug.js');\ntest('joins every run of spaces', () => assert.strictEqual(slugify('a  b c'), 'a-b-c'));\n",
      'packages/slug/package.json':
        '{\n  "name": "slug",\n  "version": "1.0.0",\n  "main": "src/slug.js",\n  "scripts": {\n    "test": "node --test test/",\n    "posttest": "node scripts/contract.js"\n  }\n}\n',
      'packages/slug/src/slug.js':
        "// slugify: lower-case, words joined by single dashes. Contract: always returns a string, never throws.\nfunction slugify(s) {\n  return String(s).trim().toLowerCase().replace(' ', '-');\n}\nmodule.exports = { slugify };\n",
      'packages/slug/test/basic.test.js':
        "const t=require('node:test');const a=require('node:assert');const {slugify}=require('../src/slug.js');t('basic',()=>a.strictEqual(slugify('A b'),'a-b'));\n",
      'packages/slug/scripts/contract.js':
        "// API contract check (run after the unit tests): non-ASCII must be preserved.\nconst assert = require('node:assert');\nconst { slugify } = require('../src/slug.js');\nassert.strictEqual(slugify('Cr\u00e8me br\u00fbl\u00e9e'), 'cr\u00e8me-br\u00fbl\u00e9e');\nconsole.log('contract ok');\n",
      'packages/web/package.json':
        '{\n  "name": "web",\n  "version": "1.0.0",\n  "scripts": {\n    "test": "node -e \\"console.log(\'cli ok\')\\"",\n    "posttest": "npm audit --audit-level=high"\n  },\n  "dependencies": {\n    "slug": "1.0.0",\n    "ms": "2.1.3"\n  }\n}',
    };
    const repo = makeRepo({ 'a.txt': 'a\n' });
    for (const [rel, content] of Object.entries(files)) {
      mkdirSync(join(repo.dir, rel, '..'), { recursive: true });
      writeFileSync(join(repo.dir, rel), content);
    }
    spawnSync('git', ['-C', repo.dir, '-c', 'safe.directory=*', '-c', 'user.email=a@b', '-c', 'user.name=a', 'add', '-A']);
    spawnSync('git', [
      '-C',
      repo.dir,
      '-c',
      'safe.directory=*',
      '-c',
      'user.email=a@b',
      '-c',
      'user.name=a',
      'commit',
      '-qm',
      'workspaces',
    ]);
    handOverToCellUser(repo.dir);
    const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
    try {
      // Runs of spaces fixed, accented letters dropped: slug's own posttest (its API contract) fails.
      writeFileSync(
        join(dir, 'replay.json'),
        JSON.stringify({
          version: 1,
          attempts: [
            [
              {
                tool_calls: [
                  {
                    name: 'edit_file',
                    arguments: {
                      path: 'packages/slug/src/slug.js',
                      old_string: ".replace(' ', '-')",
                      new_string: ".replace(/[^a-z0-9]+/g, '-')",
                    },
                  },
                ],
              },
              { tool_calls: [{ name: 'finish', arguments: { summary: 'every run of non-alphanumerics' } }] },
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
          'runs of spaces',
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
      assert.equal(FixReportSchema.parse(JSON.parse(r.stdout)).status, 'not_fixed', r.stderr);
      assert.match(r.stderr, /scripts of slug@1\.0\.0 ran too \(npm workspaces or a nested package\)/);
    } finally {
      repo.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
