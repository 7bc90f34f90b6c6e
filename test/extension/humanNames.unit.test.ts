import assert from 'node:assert/strict';
import { cellLogName, cellPurposeWords, labelInWords, runInWords, runName } from '../../extension/src/views/humanNames.js';

/** Issue 31: titles and rows name runs and cells in words, never by the runner's ids or code words. */
describe('human names for runs and cells', () => {
  const now = new Date('2026-12-05T16:00:00Z');
  const run = { issue_title: 'average() of two numbers is wrong', created_at: '2026-12-05T14:05:00Z' };

  it('a run: its issue and start time in titles, its issue in sentences; no id either way', () => {
    assert.equal(runName(run, now, 0), 'average() of two numbers is wrong · 14:05');
    assert.equal(runName(run, now, 60), 'average() of two numbers is wrong · 15:05');
    assert.equal(runInWords(run, now, 0), '"average() of two numbers is wrong"');
    const untitled = { issue_title: '  ', created_at: '2026-11-28T09:00:00Z' };
    assert.equal(runName(untitled, now, 0), 'run of Nov 28 09:00');
    assert.equal(runInWords(untitled, now, 0), 'the run of Nov 28 09:00');
    assert.equal(runInWords({ issue_title: '', created_at: 'not a time' }, now, 0), 'the run');
    const long = runName({ ...run, issue_title: 'x '.repeat(60) }, now, 0);
    assert.ok(long.length <= 60, long);
  });

  it('cell purposes in words, re-runs said in brackets, unknown ones with spaces', () => {
    assert.equal(cellPurposeWords('ground_truth'), 'ground truth check');
    assert.equal(cellPurposeWords('verdict_targeted'), 'targeted tests');
    assert.equal(cellPurposeWords('verdict'), 'verdict tests');
    assert.equal(cellPurposeWords('baseline_retry'), 'baseline tests (retry)');
    assert.equal(cellPurposeWords('verdict_targeted_uncached_stopped'), 'targeted tests (without cache, stopped)');
    assert.equal(cellPurposeWords('verdict_without_hooks'), 'verdict tests (without hooks)');
    assert.equal(cellPurposeWords('run_tests'), "agent's test run");
    assert.equal(cellPurposeWords('install'), 'dependency install');
    assert.equal(cellPurposeWords('lint_check'), 'lint check');
    assert.equal(cellPurposeWords('constructor'), 'constructor');
    for (const p of ['ground_truth', 'verdict_targeted', 'baseline_uncached', 'run_command']) assert.doesNotMatch(cellPurposeWords(p), /_/);
  });

  it('a Cells view row: only its words change, not what it was built from', () => {
    const row = { label: 'verdict_targeted · attempt 2', description: 'host · 1 s · exit 1', icon: 'error' };
    assert.deepEqual(labelInWords(row, 'verdict_targeted'), { ...row, label: 'targeted tests · attempt 2' });
    assert.deepEqual(labelInWords(row, 'baseline'), row);
  });

  it("a cell log's tab: its purpose in words and its attempt", () => {
    assert.equal(cellLogName({ purpose: 'verdict_targeted', attempt_index: 2 }), 'targeted tests, attempt 2');
    assert.equal(cellLogName({ purpose: 'ground_truth', attempt_index: null }), 'ground truth check');
  });
});
