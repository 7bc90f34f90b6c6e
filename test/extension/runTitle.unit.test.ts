import assert from 'node:assert/strict';
import type { RunSummary } from '../../runner/src/protocol/rpcFix.js';
import { runView } from '../../extension/src/views/presentation.js';
import { shortTitle, startTimeLabel } from '../../extension/src/views/runTitle.js';

const run = (over: Partial<RunSummary>): RunSummary => ({
  run_id: 'run-1',
  status: 'fixed',
  created_at: '2025-11-30T13:05:00.000Z',
  updated_at: '',
  repo: '/r',
  base_commit: 'abcdef0123456789',
  issue_title: 'average is wrong',
  test_cmd: 'pytest',
  provider: 'host',
  image: '',
  model: 'replay:x',
  attempts: 2,
  winner_attempt: 0,
  review: 'pending',
  environment: null,
  ending: null,
  error: null,
  ...over,
});

describe('run titles in the Attempts view (pure)', () => {
  describe('run titles', () => {
    it('a short first line is kept; a long one is cut at a word with an ellipsis, within the limit', () => {
      assert.equal(shortTitle('average is wrong'), 'average is wrong');
      assert.equal(shortTitle('  spaced   out\ttitle '), 'spaced out title');
      const long = 'average() is wrong: average([2, 4]) returns 2.0 instead of 3.0, and average([5]) returns 2.5.';
      const t = shortTitle(long);
      assert.equal(t, 'average() is wrong: average([2, 4]) returns 2.0 instead of…');
      assert.ok(t.length <= 60);
      assert.equal(shortTitle('a'.repeat(100), 20), `${'a'.repeat(19)}…`, 'one long word is cut inside');
      assert.equal(shortTitle('exactly twenty chars', 20), 'exactly twenty chars');
      assert.equal(shortTitle('the cut, lands after a comma here', 14), 'the cut…');
      assert.equal(shortTitle('a word ends just at the room left', 12), 'a word ends…', 'a word ending at the cut is kept');
    });

    it('the start time: hh:mm today, with the date before today, with the year before this year (local zone)', () => {
      const now = new Date('2025-11-30T18:00:00Z');
      assert.equal(startTimeLabel('2025-11-30T13:05:00Z', now, 0), '13:05');
      assert.equal(startTimeLabel('2025-11-30T13:05:00Z', now, 60), '14:05', 'UTC+1');
      assert.equal(startTimeLabel('2025-11-28T13:05:09Z', now, 60), 'Nov 28 14:05');
      assert.equal(startTimeLabel('2024-11-28T13:05:00Z', now, 0), 'Nov 28 2024 13:05');
      // 23:30 UTC on the 29th is already the 30th in UTC+1, and still the 29th in UTC-5.
      assert.equal(startTimeLabel('2025-11-29T23:30:00Z', now, 60), '00:30');
      assert.equal(startTimeLabel('2025-11-29T23:30:00Z', now, -300), 'Nov 29 18:30');
      assert.equal(startTimeLabel('', now, 0), '');
      assert.equal(startTimeLabel('not a date', now, 0), '');
    });

    it('the run row: short title as label, start time first in the description, full first line and run id in the tooltip', () => {
      const title = 'average() is wrong: average([2, 4]) returns 2.0 instead of 3.0, and average([5]) returns 2.5.';
      const now = new Date('2025-11-30T18:00:00Z');
      const today = runView(run({ issue_title: title }), now, 60);
      assert.equal(today.label, 'average() is wrong: average([2, 4]) returns 2.0 instead of…');
      assert.equal(today.description, '14:05 · fixed · review · 2 on host');
      assert.deepEqual(today.tooltip.split('\n').slice(0, 2), [title, 'run-1: fixed']);
      const earlier = runView(run({ issue_title: title, run_id: 'run-2', created_at: '2025-11-28T08:00:00Z' }), now, 60);
      assert.equal(earlier.label, today.label, 'the same issue, the same label');
      assert.equal(earlier.description, 'Nov 28 09:00 · fixed · review · 2 on host', 'told apart by their start');
      assert.equal(runView(run({ issue_title: '', created_at: '' }), now, 0).label, 'run-1', 'no title: the run id');
      assert.equal(runView(run({ created_at: '' }), now, 0).description, 'fixed · review · 2 on host', 'no time: nothing in its place');
    });
  });
});
