import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { fixWith, type ToolCall } from '../../helpers/fixCli.js';

/** The base commit lacks data.txt, so its test fails; the fix writes it. */
const TEST = [
  'import unittest',
  '',
  'class T(unittest.TestCase):',
  '    def test_data(self):',
  "        with open('data.txt', 'rb') as f:",
  "            self.assertEqual(f.read(), b'ok\\n')",
  '',
].join('\n');
const WRITE: ToolCall = { name: 'write_file', arguments: { path: 'data.txt', content: 'ok\n' } };
const RUN_TESTS: ToolCall = { name: 'run_tests', arguments: {} };
const ARGS = ['--test-cmd', 'python3 -m unittest -v'];

function groundTruthCells(runId: string): number {
  const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
  return store.cells(runId).filter((c) => c.purpose.startsWith('ground_truth')).length;
}

describe('ground truth is not run twice on the same bytes (issue 29)', function () {
  this.timeout(300_000);

  it("the winner's first run_tests read exactly what a fresh checkout with its patch holds: it is the ground truth, no cell of its own", () => {
    const r = fixWith({ 'test_data.py': TEST }, [[WRITE], [RUN_TESTS]], ARGS);
    assert.equal(r.status, 0, r.stderr);
    const report = r.report!;
    assert.equal(report.status, 'fixed');
    assert.match(r.stderr, /ground truth: attempt 0's run_tests \(turn 2\) was the first cell in its worktree and read exactly the bytes/);
    assert.match(report.ground_truth!.verdict!.reused_from ?? '', /attempt 0's run_tests \(turn 2\), on the same bytes/);
    assert.equal(groundTruthCells(report.run_id), 0);
  });

  it('a file the agent wrote that git ignores (not in its patch): the cell runs, and the run is not fixed (red team)', () => {
    // Its own worktree holds data.txt; a fresh checkout with its patch (README.md only) does not.
    const r = fixWith(
      { 'test_data.py': TEST, '.gitignore': 'data.txt\n', 'README.md': 'data\n' },
      [[WRITE, { name: 'write_file', arguments: { path: 'README.md', content: 'data, written\n' } }], [RUN_TESTS]],
      ARGS,
    );
    const report = r.report!;
    assert.doesNotMatch(r.stderr, /taken, not run twice/);
    assert.equal(groundTruthCells(report.run_id), 1);
    assert.equal(report.attempts[0]!.verdict!.green, true, 'green in its own worktree');
    assert.equal(report.ground_truth!.verdict!.green, false, 'red from the patch alone');
    assert.equal(report.status, 'not_fixed', r.stderr);
  });

  it('a cell before the verdict (run_tests twice): the worktree is more than its patch, the cell runs', () => {
    const r = fixWith({ 'test_data.py': TEST }, [[RUN_TESTS], [WRITE], [RUN_TESTS]], ARGS);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.report!.status, 'fixed');
    assert.doesNotMatch(r.stderr, /taken, not run twice/);
    assert.equal(groundTruthCells(r.report!.run_id), 1);
  });
});
