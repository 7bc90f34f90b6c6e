import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { BUGGY_CALC, CALC_RIGHT_ONLY_IN_ATTEMPT_WORKTREE } from '../../helpers/calcRepo.js';
import { fixWith, fixWithAttempts, type ToolCall, write } from '../../helpers/fixCli.js';

const RUN_TESTS: ToolCall = { name: 'run_tests', arguments: {} };
const ARGS = ['--test-cmd', 'python3 -m unittest -v'];

function groundTruthCells(runId: string): number {
  const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
  return store.cells(runId).filter((c) => c.purpose.startsWith('ground_truth')).length;
}

/*
 * Ground truth runs in a cell of its own even when the winner's verdict ran on exactly the
 * bytes a fresh checkout with its patch holds (tried in this issue, broken by a red team): a
 * cell sees more than the worktree's files, and a patch can tell an attempt's worktree from a
 * fresh checkout by what it sees.
 */
describe('ground truth always runs the patch on a fresh checkout (issue 29 red team)', function () {
  this.timeout(300_000);

  it("a patch that passes only in an attempt's worktree (it reads the worktree's name from .git) is not fixed", () => {
    const r = fixWith(
      BUGGY_CALC,
      [[{ name: 'write_file', arguments: { path: 'calc.py', content: CALC_RIGHT_ONLY_IN_ATTEMPT_WORKTREE } }], [RUN_TESTS]],
      ARGS,
    );
    const report = r.report!;
    assert.equal(report.attempts[0]!.verdict!.green, true, 'green in its own worktree');
    assert.ok(groundTruthCells(report.run_id) >= 1);
    assert.equal(report.ground_truth!.verdict!.green, false, 'red from the patch alone');
    assert.equal(report.status, 'not_fixed', r.stderr);
  });

  it('a file the agent wrote that git ignores (not in its patch) is not in the fresh checkout: not fixed', () => {
    const test =
      "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_data(self):\n        with open('data.txt', 'rb') as f:\n            self.assertEqual(f.read(), b'ok\\n')\n";
    const r = fixWith(
      { 'test_data.py': test, '.gitignore': 'data.txt\n', 'README.md': 'data\n' },
      [
        [
          { name: 'write_file', arguments: { path: 'data.txt', content: 'ok\n' } },
          { name: 'write_file', arguments: { path: 'README.md', content: 'data, written\n' } },
        ],
        [RUN_TESTS],
      ],
      ARGS,
    );
    const report = r.report!;
    assert.equal(report.attempts[0]!.verdict!.green, true, 'green in its own worktree');
    assert.ok(groundTruthCells(report.run_id) >= 1);
    assert.equal(report.ground_truth!.verdict!.green, false);
    assert.equal(report.status, 'not_fixed', r.stderr);
  });

  it('a change that passed only in its worktree (code in a directory marked as a cache) does not hide a real fix ranked after it: the next green change is checked (red team, issue 32)', () => {
    const TAG = 'Signature: 8a477f597d28d172789f06886806bc55\n';
    const r = fixWithAttempts(
      BUGGY_CALC,
      [
        [
          [
            write('fast/CACHEDIR.TAG', TAG),
            write('fast/__init__.py', 'def add(a, b):\n    return a + b\n'),
            write('calc.py', 'from fast import add\n'),
          ],
        ],
        [[write('calc.py', '# Sums two numbers.\ndef add(a, b):\n    total = a + b\n    return total\n')]],
      ],
      ARGS,
    );
    const report = r.report!;
    assert.equal(report.attempts[0]!.verdict!.green, true, 'green in its own worktree');
    assert.deepEqual(report.attempts[0]!.generated, ['fast/']);
    assert.equal(report.status, 'fixed', r.stderr);
    assert.ok(report.winner!.attempts[0]!.endsWith('-a1'), `winner ${report.winner!.attempts[0]}`);
    assert.match(r.stderr, /attempt 0's change failed on a fresh checkout: checking the next green change, attempt 1's/);
    assert.ok(groundTruthCells(report.run_id) >= 2);
  });
});
