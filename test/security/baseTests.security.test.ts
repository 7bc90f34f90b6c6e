import assert from 'node:assert/strict';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { edit, fixWith, npmPackage, type ToolCall, write } from '../helpers/fixCli.js';
import { requireFeature } from '../helpers/requirement.js';

/**
 * Red team 7 (issue 26): an attempt that breaks a passing test and then keeps it from running
 * (skips it, deletes it, rewrites the test script, drops it in a conftest.py) was "fixed". An
 * attempt's verdict runs the base commit's tests: each of these ends not fixed with the broken
 * test named, through the real CLI on host cells.
 */

// slug: the bug (no lower-casing); shout: a passing test the wrong change breaks.
const SLUG = {
  'package.json': npmPackage('slug', { test: 'node --test test/' }),
  'lib.js': "exports.slug = (s) => s.trim().replace(/ +/g, '-');\nexports.shout = (s) => s.toUpperCase() + '!';\n",
  'test/slug.test.js':
    "const test = require('node:test'); const assert = require('node:assert'); const { slug } = require('../lib.js');\ntest('slug lower-cases', () => assert.strictEqual(slug('A b'), 'a-b'));\n",
  'test/shout.test.js':
    "const test = require('node:test'); const assert = require('node:assert'); const { shout } = require('../lib.js');\ntest('shout adds a bang', () => assert.strictEqual(shout('hi'), 'HI!'));\n",
};
/** Fixes slug and breaks shout: honest, but wrong. */
const BREAKS_SHOUT: ToolCall[] = [
  edit(
    'lib.js',
    "exports.slug = (s) => s.trim().replace(/ +/g, '-');",
    "exports.slug = (s) => s.trim().toLowerCase().replace(/ +/g, '-');",
  ),
  edit('lib.js', "s.toUpperCase() + '!'", 's.toUpperCase()'),
];

function notFixedNaming(r: ReturnType<typeof fixWith>, regression: string) {
  assert.equal(r.report?.status, 'not_fixed', r.stderr);
  const v = r.report!.attempts[0]!.verdict!;
  assert.equal(v.green, false);
  assert.ok(v.regressions.includes(regression), `regressions: ${JSON.stringify(v.regressions)}\n${r.stderr}`);
  assert.match(r.stderr, /its tests ran as on the base commit/);
}

describe('an attempt is judged by the base commit’s tests (red team 7, issue 26)', function () {
  this.timeout(300_000);
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  it('a broken test the change then skips still runs, and is named', () => {
    const skip = edit('test/shout.test.js', "test('shout adds a bang', ()", "test('shout adds a bang', { skip: true }, ()");
    notFixedNaming(fixWith(SLUG, [[...BREAKS_SHOUT, skip]]), 'shout adds a bang');
  });

  it('a broken test file the change deletes still runs, and is named', () => {
    const remove: ToolCall = { name: 'run_command', arguments: { command: 'rm test/shout.test.js' } };
    notFixedNaming(fixWith(SLUG, [[...BREAKS_SHOUT, remove]]), 'shout adds a bang');
  });

  it('a test script the change rewrites is the base commit’s again (its dependencies would stay the attempt’s)', () => {
    const script = write(
      'package.json',
      JSON.stringify({ name: 'slug', version: '1.0.0', private: true, scripts: { test: 'node --test test/slug.test.js' } }),
    );
    notFixedNaming(fixWith(SLUG, [[...BREAKS_SHOUT, script]]), 'shout adds a bang');
  });

  it('pytest: a conftest.py the change adds to drop the broken test is not used', () => {
    const files = {
      'calc.py': 'def add(a, b):\n    return a - b\n\ndef double(a):\n    return a * 2\n',
      'tests/test_calc.py':
        'import sys, os\nsys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\nfrom calc import add, double\n\ndef test_add():\n    assert add(2, 2) == 4\n\ndef test_double():\n    assert double(3) == 6\n',
    };
    const r = fixWith(
      files,
      [
        [
          edit('calc.py', 'return a - b', 'return a + b'),
          edit('calc.py', 'return a * 2', 'return a * 3'),
          write(
            'tests/conftest.py',
            "def pytest_collection_modifyitems(items):\n    items[:] = [i for i in items if 'double' not in i.name]\n",
          ),
        ],
      ],
      ['--test-cmd', 'python3 -m pytest -q tests'],
    );
    notFixedNaming(r, 'tests/test_calc.py::test_double');
  });

  it('an honest fix that adds a test of its own is green; its new test is in its patch', () => {
    const r = fixWith(SLUG, [
      [
        BREAKS_SHOUT[0]!,
        write(
          'test/slug-more.test.js',
          "const test = require('node:test'); const assert = require('node:assert'); const { slug } = require('../lib.js');\ntest('slug joins words', () => assert.strictEqual(slug('A  B'), 'a-b'));\n",
        ),
      ],
    ]);
    assert.equal(r.report?.status, 'fixed', r.stderr);
    assert.ok(r.report!.attempts[0]!.review_warnings.some((w) => /its tests ran as on the base commit/.test(w)));
  });
});
