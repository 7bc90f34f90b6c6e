import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { BUGGY_CALC, CALC_RIGHT_ONLY_IN_ATTEMPT_WORKTREE, FIXED_CALC } from '../../helpers/calcRepo.js';
import { fixWith, type ToolCall, write } from '../../helpers/fixCli.js';

const RUN_TESTS: ToolCall = { name: 'run_tests', arguments: {} };
const ARGS = ['--test-cmd', 'python3 -m unittest -v'];
// The baseline runs beside the attempt from its start: a first turn that waits lets it end
// before the attempt's tests run (the ground truth starts early only once the baseline is known).
const LET_THE_BASELINE_END: ToolCall = { name: 'run_command', arguments: { command: 'sleep 1' } };

function groundTruthCells(runId: string) {
  const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
  return store.cells(runId).filter((c) => c.purpose.startsWith('ground_truth'));
}

/*
 * Issue 29: the winner's ground truth starts as soon as it runs its tests on its change, on a
 * core left idle, and is taken only when the winner ends with exactly the patch it tested.
 * Four cells at once here, so a core is idle beside the attempt's tests whatever the machine.
 */
describe('ground truth started early, on an idle core (issue 29)', function () {
  this.timeout(300_000);
  const before = process.env.FORGE_MAX_CELLS;
  beforeEach(() => {
    process.env.FORGE_MAX_CELLS = '4';
  });
  afterEach(() => {
    if (before === undefined) delete process.env.FORGE_MAX_CELLS;
    else process.env.FORGE_MAX_CELLS = before;
  });

  it("the winner's ground truth starts beside its run_tests and is taken as its ground truth: one ground-truth cell", () => {
    const r = fixWith(BUGGY_CALC, [[LET_THE_BASELINE_END], [write('calc.py', FIXED_CALC)], [RUN_TESTS]], ARGS);
    const report = r.report!;
    assert.equal(report.status, 'fixed', r.stderr);
    assert.match(r.stderr, /attempt 0: the ground truth of its change starts early, on an idle core/);
    assert.match(r.stderr, /ground truth: attempt 0's change on a fresh checkout of the base commit: started early/);
    // Started before the attempt was judged, not after selection.
    assert.ok(r.stderr.indexOf('starts early') < r.stderr.indexOf('attempt 0: green'), r.stderr);
    assert.doesNotMatch(r.stderr, /running it again/);
    const cells = groundTruthCells(report.run_id);
    assert.equal(cells.length, 1, 'the ground truth ran once');
    assert.equal(cells[0]!.exit_code, 0);
    assert.equal(report.ground_truth!.verdict!.green, true);
  });

  it('a change written after the early ground truth started is judged afresh: a patch that passes only in its worktree is not fixed', () => {
    // First an honest fix (its ground truth starts early and passes), then the red team's
    // patch that passes only where .git names an attempt's worktree: the early ground truth
    // tested other bytes, so it must not stand for the final change.
    const r = fixWith(
      BUGGY_CALC,
      [[LET_THE_BASELINE_END], [write('calc.py', FIXED_CALC)], [RUN_TESTS], [write('calc.py', CALC_RIGHT_ONLY_IN_ATTEMPT_WORKTREE)]],
      ARGS,
    );
    const report = r.report!;
    assert.match(r.stderr, /attempt 0: the ground truth of its change starts early/);
    assert.equal(report.attempts[0]!.verdict!.green, true, 'green in its own worktree');
    assert.match(r.stderr, /ground truth: attempt 0's change on a fresh checkout of the base commit\n/);
    assert.equal(report.ground_truth!.verdict!.green, false, 'red from the patch alone');
    assert.equal(report.status, 'not_fixed', r.stderr);
  });

  it('--no-early-ground-truth starts it only after selection', () => {
    const r = fixWith(
      BUGGY_CALC,
      [[LET_THE_BASELINE_END], [write('calc.py', FIXED_CALC)], [RUN_TESTS]],
      [...ARGS, '--no-early-ground-truth'],
    );
    assert.equal(r.report!.status, 'fixed', r.stderr);
    assert.doesNotMatch(r.stderr, /starts early/);
    assert.equal(groundTruthCells(r.report!.run_id).length, 1);
  });
});
