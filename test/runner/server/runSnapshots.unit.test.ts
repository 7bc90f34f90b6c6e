import assert from 'node:assert/strict';
import { runSnapshot, shownAttemptStatus } from '../../../runner/src/server/runSnapshots.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { aVerdict } from '../../helpers/verdicts.js';

describe('run snapshots: what a view shows of a stored run', () => {
  it('attempts of a run whose runner died: the running one is interrupted, the queued ones wait for Resume', () => {
    const store = new RunStore(openStore(':memory:'));
    store.createRun(
      {
        id: 'run-dead',
        repo: '/r',
        base_commit: 'abc',
        issue: 'x',
        test_cmd: 'true',
        provider: 'host',
        image: '',
        model: 'replay:x',
        attempts: 3,
        runner_pid: 2 ** 22 + 7,
        install_cmd: null,
      },
      [0, 0.7, 0.7],
    );
    store.startAttempt('run-dead', 0);
    const dead = runSnapshot(store, 'run-dead', [], () => false)!;
    assert.equal(dead.run.status, 'interrupted');
    assert.deepEqual(
      dead.attempts.map((a) => a.status),
      ['interrupted', 'queued', 'queued'],
    );
    const alive = runSnapshot(store, 'run-dead', [], () => true)!;
    assert.deepEqual([alive.run.status, ...alive.attempts.map((a) => a.status)], ['running', 'running', 'queued', 'queued']);
  });

  it('shownAttemptStatus: skipped only for a run that ended, interrupted only for a dead runner', () => {
    assert.equal(shownAttemptStatus('queued', 'ended'), 'skipped');
    assert.equal(shownAttemptStatus('queued', 'interrupted'), 'queued');
    assert.equal(shownAttemptStatus('running', 'interrupted'), 'interrupted');
    assert.equal(shownAttemptStatus('running', 'going'), 'running');
    assert.equal(shownAttemptStatus('finished', 'interrupted'), 'finished');
  });

  it('an attempt green on the tests it fixed is "green so far" while its run goes on, and its lines are +added −removed (issue 31)', () => {
    const store = new RunStore(openStore(':memory:'));
    const run = {
      id: 'run-p',
      repo: '/r',
      base_commit: 'abc',
      issue: 'x',
      test_cmd: 'true',
      provider: 'host',
      image: '',
      model: 'replay:x',
    };
    store.createRun({ ...run, attempts: 2, runner_pid: process.pid, install_cmd: null }, [0, 0.7]);
    store.startAttempt('run-p', 0);
    const patch = Buffer.from('diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-return a - b\n+return a + b\n');
    const soFar = aVerdict(true, { failing_before: ['test_mul'], fixed: ['test_add'], provisional: true });
    store.finishAttempt('run-p', 0, { verdict: soFar, patch, turns: 2, tokens: 0, stop: 'finish' });
    const going = runSnapshot(store, 'run-p', [], () => true)!.attempts[0]!;
    assert.deepEqual([going.green, going.provisional, going.diff_size, going.diff_lines], [true, true, 2, { added: 1, removed: 1 }]);
    // Held to the run's issue tests at its end: no longer provisional, whatever it became.
    store.setAttemptVerdict('run-p', 0, { ...soFar, green: false, provisional: false });
    const held = runSnapshot(store, 'run-p', [], () => true)!.attempts[0]!;
    assert.deepEqual([held.green, held.provisional], [false, undefined]);
    // Once ended, what the verdict did not cover reaches the views from the report.
    store.finishRun('run-p', 'fixed', 0, {
      attempts: [{ index: 0, review_warnings: ['its tests ran as on the base commit: its changes to test_calc.py ...'] }],
    });
    const ended = runSnapshot(store, 'run-p', [], () => true)!.attempts[0]!;
    assert.deepEqual([ended.provisional, ended.review_warnings?.length], [undefined, 1]);
    assert.match(ended.review_warnings![0]!, /test_calc\.py/);
  });
});
