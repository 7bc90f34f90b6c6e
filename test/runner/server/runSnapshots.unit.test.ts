import assert from 'node:assert/strict';
import { runSnapshot, shownAttemptStatus } from '../../../runner/src/server/runSnapshots.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';

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
});
