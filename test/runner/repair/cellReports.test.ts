import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { probeBubblewrap } from '../../../runner/src/cells/bubblewrapProbe.js';
import { edit, fixWith } from '../../helpers/fixCli.js';
import { requireFeature } from '../../helpers/requirement.js';

/**
 * Issue 26, part 3: the report pytest writes when asked through PYTEST_ADDOPTS, read from the
 * cell's worktree. A real pytest in host cells, through the real CLI; the user's own command
 * (`-q -rN`: a console that names no test) is left as it is.
 */
describe('a test report the test runner writes on request (pytest --junitxml through PYTEST_ADDOPTS, host cells)', function () {
  this.timeout(300_000);
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    const pytest = spawnSync('python3', ['-m', 'pytest', '--version'], { encoding: 'utf8' });
    requireFeature(this, pytest.status === 0, 'pytest is not installed for python3 (pip install pytest)');
  });

  it('names the regression from the file when the console names no test, and the report stays out of the patch', () => {
    const r = fixWith(
      {
        'calc.py': 'def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n',
        'test_calc.py':
          'from calc import add, mul\n\ndef test_add():\n    assert add(2, 2) == 4\n\ndef test_mul():\n    assert mul(2, 3) == 6\n',
      },
      // add is fixed; mul is broken by the same change.
      [[edit('calc.py', 'return a - b', 'return a + b'), edit('calc.py', 'return a * b', 'return a + b')]],
      ['--test-cmd', 'python3 -m pytest -q -rN -p no:cacheprovider'],
    );
    assert.equal(r.report?.status, 'not_fixed', r.stderr);
    const attempt = r.report!.attempts[0]!;
    const v = attempt.verdict!;
    assert.deepEqual(
      [v.framework, v.regressions, v.regressions_known, v.failing],
      ['pytest', ['test_calc.py::test_mul'], true, ['test_calc.py::test_mul']],
    );
    assert.equal(JSON.stringify(attempt).includes('.forge-cell-reports'), false, 'the report is no part of the attempt');
  });
});
