import assert from 'node:assert/strict';
import {
  branchOfRun,
  formatAge,
  isOrphanBranch,
  orphanFacts,
  judgeOldRun,
  parseDuration,
  selectOldRuns,
} from '../../../runner/src/workspace/oldRunSelection.js';

const NOW = Date.parse('2026-12-05T12:00:00Z');
const DAY = 86_400;
const run = (id: string, daysAgo: number, over: Partial<{ status: string; review: 'pending' | 'applied' | 'discarded' | null }> = {}) => {
  const t = new Date(NOW - daysAgo * DAY * 1000).toISOString();
  return { id, status: 'fixed', review: 'pending' as const, created_at: t, updated_at: t, ...over };
};

describe('old run selection (branch hygiene)', () => {
  it('parses durations with a unit and refuses anything else', () => {
    assert.equal(parseDuration('3d'), 3 * DAY);
    assert.equal(parseDuration('12h'), 12 * 3600);
    assert.equal(parseDuration('90m'), 5400);
    assert.equal(parseDuration('2w'), 14 * DAY);
    assert.equal(parseDuration('1.5d'), 1.5 * DAY);
    assert.equal(parseDuration('45s'), 45);
    for (const bad of ['', '3', 'd', '3x', '-1d', '0d', '0s', '1e3d', '3 days', '3650.5d', '99999999w', ' 3d;rm'])
      assert.throws(() => parseDuration(bad), /--older-than .*expected a positive duration/, bad);
  });

  it('takes old unreviewed runs, never running or reviewed or recent ones', () => {
    assert.deepEqual(judgeOldRun(run('a', 4), NOW, 3 * DAY, false), { old: true, age_s: 4 * DAY });
    assert.deepEqual(judgeOldRun(run('a', 4), NOW, 3 * DAY, true), { old: false, why: 'in progress' });
    assert.deepEqual(judgeOldRun(run('a', 4, { review: 'applied' }), NOW, 3 * DAY, false), { old: false, why: 'reviewed' });
    assert.deepEqual(judgeOldRun(run('a', 4, { review: 'discarded' }), NOW, 3 * DAY, false), { old: false, why: 'reviewed' });
    assert.deepEqual(judgeOldRun(run('a', 2), NOW, 3 * DAY, false), { old: false, why: 'recent' });
    // Runs that did not fix (review null) were never reviewed: their leftovers count too.
    assert.equal(judgeOldRun(run('a', 4, { status: 'not_fixed', review: null }), NOW, 3 * DAY, false).old, true);
    assert.equal(judgeOldRun(run('a', 4, { status: 'interrupted', review: null }), NOW, 3 * DAY, false).old, true);
    assert.deepEqual(judgeOldRun({ ...run('a', 4), updated_at: 'garbage', created_at: '' }, NOW, 3 * DAY, false), {
      old: false,
      why: 'no date',
    });
  });

  it('selects oldest first and asks whether each is in progress', () => {
    const runs = [run('new', 1), run('old', 10), run('mid', 5), run('busy', 20), run('done', 30, { review: 'applied' })];
    const picked = selectOldRuns(runs, NOW, 3 * DAY, (r) => r.id === 'busy').map((x) => x.run.id);
    assert.deepEqual(picked, ['old', 'mid']);
  });

  it("knows a run's branches and which branches are orphans", () => {
    assert.ok(branchOfRun('forge/attempt/run-abc-123456-a0', 'run-abc-123456'));
    assert.ok(branchOfRun('forge/attempt/run-abc-123456-baseline', 'run-abc-123456'));
    assert.ok(!branchOfRun('forge/attempt/run-abc-1234567-a0', 'run-abc-123456'));
    const known = new Set(['run-abc-123456']);
    const b = (branch: string, age_s: number, checkedOut = false) => ({ branch, age_s, checkedOut });
    assert.ok(isOrphanBranch(b('forge/attempt/run-gone-000000-a1', 5 * DAY), known, 3 * DAY));
    assert.ok(!isOrphanBranch(b('forge/attempt/run-abc-123456-a1', 5 * DAY), known, 3 * DAY), 'a known run owns it');
    assert.ok(!isOrphanBranch(b('forge/attempt/run-gone-000000-a1', DAY), known, 3 * DAY), 'too recent');
    assert.ok(!isOrphanBranch(b('forge/attempt/run-gone-000000-a1', 5 * DAY, true), known, 3 * DAY), 'checked out');
    assert.ok(!isOrphanBranch(b('feature/x', 5 * DAY), known, 3 * DAY), 'not a forge branch');
    // A branch made a minute ago at an old base commit is new; one without a reflog is never removed.
    const NOWMS = 1_800_000_000_000;
    const made = (created: number | null) =>
      orphanFacts({ branch: 'forge/attempt/run-gone-000000-a1', tipTime: NOWMS - 400 * DAY * 1000, createdTime: created }, NOWMS, false);
    assert.equal(made(NOWMS - 60_000).age_s, 60);
    assert.ok(!isOrphanBranch(made(NOWMS - 60_000), known, 3 * DAY), 'created a minute ago at a 400-day-old commit');
    assert.ok(isOrphanBranch(made(NOWMS - 5 * DAY * 1000), known, 3 * DAY), 'created five days ago');
    assert.ok(!isOrphanBranch(made(null), known, 3 * DAY), 'no reflog: age unknown, kept');
  });

  it('formats ages', () => {
    assert.equal(formatAge(3 * DAY + 4 * 3600), '3d 4h');
    assert.equal(formatAge(5 * 3600 + 12 * 60), '5h 12m');
    assert.equal(formatAge(40 * 60), '40m');
    assert.equal(formatAge(20), '20s');
  });
});
