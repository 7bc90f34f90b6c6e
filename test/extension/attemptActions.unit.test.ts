import assert from 'node:assert/strict';
import { ATTEMPT_ACTION_COMMANDS, attemptActionStates, pageAction } from '../../extension/src/panels/attemptActions.js';

/** Issue 31: the attempt details page's buttons, and the check of what the (untrusted) page asks. */
describe('attempt details: which actions apply, and the page messages accepted', () => {
  type D = Parameters<typeof attemptActionStates>[0];
  const details = (attempt: Partial<D['attempt']>, run: Partial<D['run']> = {}): D =>
    ({
      run: { run_id: 'run-1', review: 'pending', winner_attempt: 0, ...run },
      attempt: { index: 1, status: 'finished', diff_size: 3, winner: false, ...attempt },
    }) as D;
  const enabled = (s: ReturnType<typeof attemptActionStates>) =>
    Object.entries(s)
      .filter(([, v]) => v.show && v.why === null)
      .map(([k]) => k);

  it('a changed attempt beside a winner: all four; the winner itself: no Compare', () => {
    assert.deepEqual(enabled(attemptActionStates(details({}))), ['viewDiff', 'apply', 'applyPart', 'compareWithWinner']);
    const winner = attemptActionStates(details({ index: 0, winner: true }));
    assert.equal(winner.compareWithWinner.show, false);
    assert.deepEqual(enabled(winner), ['viewDiff', 'apply', 'applyPart']);
    assert.equal(attemptActionStates(details({}, { winner_attempt: null })).compareWithWinner.show, false);
  });

  it('disabled with the reason: no change, not finished, run applied or discarded', () => {
    const none = attemptActionStates(details({ diff_size: 0 }));
    assert.deepEqual(enabled(none), []);
    assert.equal(none.viewDiff.why, 'The attempt changed nothing.');
    assert.equal(attemptActionStates(details({ status: 'running' })).apply.why, 'The attempt has not finished.');
    const applied = attemptActionStates(details({}, { review: 'applied' }));
    assert.deepEqual(enabled(applied), ['viewDiff', 'compareWithWinner']);
    assert.equal(applied.apply.why, 'The run was already applied.');
    assert.equal(attemptActionStates(details({}, { review: 'discarded' })).applyPart.why, 'The run was discarded.');
    // A budget-stopped attempt's change was judged and can be reviewed.
    assert.deepEqual(enabled(attemptActionStates(details({ status: 'budget' }))).length, 4);
  });

  it('a page message names only a known action that is enabled now; ids in it are never read', () => {
    const states = attemptActionStates(details({}));
    assert.equal(pageAction({ type: 'action', action: 'viewDiff' }, states), 'viewDiff');
    assert.equal(pageAction({ type: 'action', action: 'apply', run_id: 'other', index: 9 }, states), 'apply');
    for (const bad of [
      null,
      'viewDiff',
      42,
      {},
      { type: 'action' },
      { type: 'action', action: 'rm -rf' },
      { type: 'run', action: 'apply' },
    ])
      assert.equal(pageAction(bad, states), null, JSON.stringify(bad));
    assert.equal(pageAction({ type: 'action', action: 'toString' }, states), null);
    assert.equal(pageAction({ type: 'action', action: 'apply' }, attemptActionStates(details({}, { review: 'applied' }))), null);
    assert.equal(
      pageAction({ type: 'action', action: 'compareWithWinner' }, attemptActionStates(details({ index: 0, winner: true }))),
      null,
    );
  });

  it('each action runs the command the Attempts view offers', () => {
    assert.deepEqual(ATTEMPT_ACTION_COMMANDS, {
      viewDiff: 'forge.viewAttemptDiff',
      apply: 'forge.applyAttempt',
      applyPart: 'forge.applyPartOfAttempt',
      compareWithWinner: 'forge.compareWithWinner',
    });
  });
});
