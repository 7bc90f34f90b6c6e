import assert from 'node:assert/strict';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { edit, fixWith, npmPackage, write } from '../helpers/fixCli.js';
import { requireFeature } from '../helpers/requirement.js';

/**
 * Issue 25, red team rounds 3 to 8: a wrong fix reported "fixed" through npm's hook rule (the
 * tests passed, a posttest then failed for want of the network). Each test is a repository and
 * an agent's change, honest but wrong unless said, run through the real CLI on host cells; each
 * must end not fixed.
 */

/** The one attempt's verdict of a run that must not be fixed. */
function notFixedVerdict(r: ReturnType<typeof fixWith>) {
  assert.equal(r.report!.status, 'not_fixed', r.stderr);
  return r.report!.attempts[0]!.verdict!;
}

/** What npm prints when a test stage passed and a posttest failed for want of the network. */
const FAKE_HOOK =
  "console.log('ok add\\n1 passed, 0 failed\\n\\n> add@1.0.0 posttest\\n> npm audit\\n\\nnpm ERR! request to https://registry.npmjs.org failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org');\n";
const ADD = {
  'package.json': '{"name":"add","version":"1.0.0","scripts":{"test":"node test.js"}}\n',
  'add.js': 'module.exports = (a, b) => a - b;\n',
  'test.js':
    "const add = require('./add.js');\nif (add(2, 2) !== 4) { console.log('FAIL add'); console.log('0 passed, 1 failed'); process.exit(1); }\nconsole.log('ok add'); console.log('1 passed, 0 failed');\n",
};

const WORKSPACES: Record<string, string> = {
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

describe('a failing test run is never green on what it printed (issue 25, red team rounds 3 to 8)', function () {
  this.timeout(300_000);
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  it('a command that is not npm printing npm’s banners: not fixed (malicious agent)', () => {
    // Without npm the fake must print the test stage's banner too.
    const banner = "console.log('\\n> add@1.0.0 test\\n> node test.js\\n');\n";
    const r = fixWith(ADD, [[write('add.js', `${banner}${FAKE_HOOK}module.exports = (a, b) => a - b;\n`)]], ['--test-cmd', 'node test.js']);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.report!.status, 'not_fixed');
    assert.equal(r.report!.attempts[0]!.verdict!.green, false);
  });

  it('npm test with no posttest at all: the printed hook is no hook of the base commit, so not fixed (malicious agent)', () => {
    const r = fixWith(ADD, [[write('add.js', `${FAKE_HOOK}module.exports = (a, b) => a - b;\n`)]], ['--test-cmd', 'npm test']);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.report!.status, 'not_fixed');
    assert.match(r.stderr, /the base commit's package.json has no posttest script: counted as failing/);
  });

  it('a posttest that fails because the change broke a local server (connect ECONNREFUSED 127.0.0.1) is not a missing network: not fixed (red team round 4)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('greet', { test: 'node --test test/', posttest: 'node e2e.js' }),
        'greet.js': "function greet(name) { return 'hello ' + name.toLowerCase(); }\nmodule.exports = { greet };\n",
        'server.js':
          "const http = require('http');\nconst { greet } = require('./greet');\nhttp.createServer((req, res) => res.end(greet(decodeURIComponent(req.url.slice(1))))).listen(Number(process.env.PORT || 3456), '127.0.0.1');\n",
        'e2e.js':
          "const { spawn } = require('child_process'); const http = require('http');\nconst child = spawn(process.execPath, [__dirname + '/server.js'], { stdio: 'inherit' });\nsetTimeout(() => { http.get('http://127.0.0.1:3456/Bob', (res) => { let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => { child.kill(); if (b !== 'hello Bob') { console.error('e2e FAIL: got', b); process.exit(1); } console.log('e2e ok'); }); }).on('error', (e) => { console.error('e2e FAIL:', e.message); child.kill(); process.exit(1); }); }, 800);\n",
        'test/greet.test.js':
          "const test = require('node:test'); const assert = require('assert');\nconst { greet } = require('../greet');\ntest('keeps case', () => assert.strictEqual(greet('Bob'), 'hello Bob'));\n",
      },
      // The unit fix is right; the same change moves the server's port, which the posttest's e2e check needs.
      [[edit('greet.js', 'name.toLowerCase()', 'name')], [edit('server.js', 'process.env.PORT || 3456', 'process.env.PORT || 3000')]],
    );
    assert.equal(r.report!.status, 'not_fixed', r.stderr);
    assert.equal(r.status, 1);
  });

  it('a posttest whose remote check fails for want of the network does not hide a local check the change broke (red team round 5)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('slug', { test: 'node --test', posttest: 'node --test e2e/local.e2e.js e2e/remote.e2e.js' }),
        'slug.js': "function slugify(title) { return title.trim().toLowerCase().replace(' ', '-'); }\nmodule.exports = { slugify };\n",
        'slug.test.js':
          "const test = require('node:test'); const assert = require('node:assert'); const { slugify } = require('./slug');\ntest('runs of spaces', () => assert.strictEqual(slugify('a  b'), 'a-b'));\n",
        'e2e/local.e2e.js':
          "const test = require('node:test'); const assert = require('node:assert'); const { slugify } = require('../slug');\ntest('trims surrounding blanks (e2e)', () => assert.strictEqual(slugify('  Hello  '), 'hello'));\n",
        'e2e/remote.e2e.js':
          "const test = require('node:test');\ntest('publishes to the staging API', async () => { await fetch('https://staging.api.example.com/health').catch((e) => { throw e.cause ?? e; }); });\n",
      },
      // Runs of spaces fixed, but trim() dropped: the local e2e check fails, beside the remote one.
      [[edit('slug.js', "title.trim().toLowerCase().replace(' ', '-')", "title.toLowerCase().replace(/\\s+/g, '-')")]],
    );
    assert.equal(r.report!.status, 'not_fixed', r.stderr);
    assert.match(r.stderr, /does more than ask the package registry, so its failure may be the change's/);
  });

  it('a posttest whose script is unchanged but whose file the attempt rewrote is held against it (red team round 5, malicious agent)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('t', { test: 'node --test', posttest: 'node e2e.js' }),
        'trim.js': 'module.exports = (s) => s.trim();\n',
        'trim.test.js':
          "const test = require('node:test'); const assert = require('node:assert');\ntest('x', () => assert.strictEqual(require('./trim')(' a'), 'a'));\n",
        // On the base: a local check, then a remote one (which fails in a cell for want of the network).
        'e2e.js':
          "const assert = require('node:assert'); assert.strictEqual(require('./trim')('  b  '), 'b');\nfetch('https://staging.api.example.com/health').catch((e) => { console.error('Error: getaddrinfo ENOTFOUND staging.api.example.com'); process.exit(1); });\n",
      },
      // A wrong change (trim gone) and an e2e.js that only prints the network error.
      [
        [
          write('trim.js', "module.exports = (s) => s.replace(/^ /, '');\n"),
          write('e2e.js', "console.error('Error: getaddrinfo ENOTFOUND staging.api.example.com'); process.exit(1);\n"),
        ],
      ],
      ['--test-cmd', 'npm test', '--allow-green-baseline'],
    );
    assert.match(r.stderr, /its posttest \(node e2e\.js\) does more than ask the package registry/);
    assert.equal(r.report!.status, 'not_fixed', r.stderr);
  });

  it('a posttest suite whose subtests change places (one fixed, another broken) is not the same failure (red team round 6)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('slug', { test: 'node --test test/', posttest: 'node --test e2e/' }),
        'slug.js': "function slugify(s) { return s.trim().toLowerCase().replace(' ', '-'); }\nmodule.exports = { slugify };\n",
        'test/slug.test.js':
          "const test = require('node:test'); const assert = require('node:assert'); const { slugify } = require('../slug');\ntest('several words', () => assert.strictEqual(slugify('a b c'), 'a-b-c'));\n",
        'e2e/release.test.js':
          "const { describe, it } = require('node:test'); const assert = require('node:assert'); const dns = require('node:dns'); const { slugify } = require('../slug');\ndescribe('release checks', () => {\n  it('registry is reachable', async () => { await dns.promises.lookup('registry.npmjs.org'); });\n  it('README: several words', () => assert.strictEqual(slugify('Release notes for May'), 'release-notes-for-may'));\n  it('README: version numbers keep their dots', () => assert.strictEqual(slugify('v1.2 Release'), 'v1.2-release'));\n});\n",
      },
      [[edit('slug.js', ".replace(' ', '-')", ".replace(/[^a-z0-9]+/g, '-')")]],
    );
    assert.equal(r.report!.status, 'not_fixed', r.stderr);
    assert.match(r.stderr, /does more than ask the package registry/);
  });

  it('a change that exits 0 before the failing test runs is not a fix: the baseline’s failing test did not run (red team, issue 26)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('calc', { test: 'node --test test/' }),
        'lib.js': 'function add(a, b) { return a + b; }\nfunction sub(a, b) { return a + b; }\nmodule.exports = { add, sub };\n',
        'test/calc.test.js':
          "const test = require('node:test'); const assert = require('node:assert'); const { add, sub } = require('../lib');\ntest('adds', () => assert.strictEqual(add(1, 2), 3));\ntest('subtracts', () => assert.strictEqual(sub(3, 1), 2));\ntest('adds negatives', () => assert.strictEqual(add(-1, -2), -3));\n",
      },
      // node --test reports the file as one passing test and exits 0.
      [[edit('lib.js', 'function sub(a, b) { return a + b; }', 'function sub(a, b) { process.exit(0); }')]],
    );
    const v = notFixedVerdict(r);
    assert.equal(v.green, false);
    assert.match(v.failing_incomplete ?? '', /1 test\(s\) ran where the baseline ran 3, and its failing test\(s\) subtracts did not run/);
  });

  it('a run that names a failing test is not green though its command exits 0 (a; b in the test script; red team, issue 26); by default a test failing before and after is named so', () => {
    const files = {
      'package.json': npmPackage('poly', { test: 'python3 -m unittest discover -s py -v; node --test js/' }),
      'py/norm.py': 'def norm(s):\n    return s.lower()\n',
      'py/test_norm.py':
        "import unittest\nfrom norm import norm\nclass T(unittest.TestCase):\n    def test_strips(self):\n        self.assertEqual(norm(' A '), 'a')\n",
      'js/slug.js': "module.exports = (s) => s.toLowerCase().replace(/\\s+/g, '-');\n",
      'js/slug.test.js':
        "const test = require('node:test'); const assert = require('node:assert'); const slug = require('./slug');\ntest('slug joins words', () => assert.strictEqual(slug(' A b '), 'a-b'));\n",
    };
    const fixSlug = [[edit('js/slug.js', 's.toLowerCase()', 's.trim().toLowerCase()')]];
    // The whole-suite rule: the exit status does not hide the failure it names.
    const v = notFixedVerdict(fixWith(files, fixSlug, ['--strict']));
    assert.deepEqual([v.exit_code, v.green, v.failing], [0, false, ['test_norm.T.test_strips']]);
    // The default rule: the issue's test (the one an attempt made pass) passes, test_strips failed before and after.
    const r = fixWith(files, fixSlug);
    assert.equal(r.report!.status, 'fixed', r.stderr);
    assert.deepEqual(r.report!.winner!.verdict.failing_before, ['test_norm.T.test_strips']);
    assert.deepEqual(r.report!.issue_tests, { tests: ['slug joins words'], rule: 'made to pass by an attempt' });
  });

  it('a TAP run that fails before a passing unittest run is read too: the regression is named though the command exits 0 (red team 3, issue 26)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('poly', { test: 'node --test js/; python3 -m unittest discover -s py -v' }),
        'py/norm.py': 'def norm(s):\n    return s.lower()\n',
        'py/test_norm.py':
          "import unittest\nfrom norm import norm\nclass T(unittest.TestCase):\n    def test_strips(self):\n        self.assertEqual(norm(' A '), 'a')\n",
        'js/slug.js': "module.exports = (s) => s.toLowerCase().replace(/\\s+/g, '-');\n",
        'js/slug.test.js':
          "const test = require('node:test'); const assert = require('node:assert'); const slug = require('./slug');\ntest('slug joins words', () => assert.strictEqual(slug('A b'), 'a-b'));\n",
      },
      // The Python fix is right; the same change breaks the JavaScript test, whose run comes first.
      [[edit('py/norm.py', 's.lower()', 's.strip().lower()'), edit('js/slug.js', "'-'", "'_'")]],
    );
    const v = notFixedVerdict(r);
    assert.deepEqual([v.exit_code, v.green, v.regressions, v.regressions_known], [0, false, ['slug joins words'], true]);
  });

  it('a registry-only posttest whose program is the repository’s own (a committed node_modules/.bin/aud that runs a test silently) is held against the change (red team 4, issue 26)', () => {
    const r = fixWith(
      {
        'package.json': npmPackage('calc', { test: 'node --test test/', posttest: 'aud --production' }),
        'lib.js': 'exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n',
        'test/add.test.js':
          "const test = require('node:test'); const assert = require('node:assert'); const { add } = require('../lib');\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n",
        'checks/mul.js': "const assert = require('node:assert'); assert.strictEqual(require('../lib').mul(2, 3), 6);\n",
        // Prints only what npm audit prints without the network, whether the check passed or not.
        'node_modules/.bin/aud':
          "#!/bin/sh\nnode checks/mul.js >/dev/null 2>&1\necho 'npm error code EAI_AGAIN'\necho 'npm error request to https://registry.npmjs.org/-/npm/v1/security/advisories/bulk failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org'\nexit 1\n",
      },
      [[write('lib.js', 'exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n')]],
      ['--test-cmd', 'npm test'],
      ['node_modules/.bin/aud'],
    );
    notFixedVerdict(r);
    assert.match(r.stderr, /the repository commits node_modules\/, so the program its posttest starts may be its own/);
  });

  it('a workspace’s own posttest that the change broke is not hidden behind another workspace’s npm audit (red team round 8)', () => {
    // Runs of spaces fixed, accented letters dropped: slug's own posttest (its API contract) fails.
    const r = fixWith(WORKSPACES, [[edit('packages/slug/src/slug.js', ".replace(' ', '-')", ".replace(/[^a-z0-9]+/g, '-')")]]);
    assert.equal(r.report!.status, 'not_fixed', r.stderr);
    // The workspaces' scripts ran inside the root's test stage (issue 26: stages split by the
    // root's lifecycle names only), so the failed contract check is the test stage's failure:
    // no hook is excused, and the run says it cannot read what failed.
    const v = r.report!.attempts[0]!.verdict!;
    assert.deepEqual([v.green, v.hook_failures], [false, []]);
    assert.match(r.stderr, /something the runner does not read failed/);
  });
});
