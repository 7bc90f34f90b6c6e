import assert from 'node:assert/strict';
import { ageText, offerOldAttempts, olderThanSeconds, retentionDays } from '../../extension/src/flows/attemptRetention.js';
import { ForgeState } from '../../extension/src/forgeState.js';
import { fake } from './fakes/vscode.js';

const oldRun = (id: string, branches: number) => ({
  run_id: id,
  repo: '/w/app',
  issue_title: 'Sum of an empty list throws',
  status: 'fixed',
  updated_at: '2026-12-01T00:00:00Z',
  age_s: 4 * 86_400,
  branches: Array.from({ length: branches }, (_, i) => `forge/attempt/${id}-a${i}`),
  worktrees: [],
});

/** A runner that answers runs/old with `runs` and records what was asked. */
function fakeRunner(runs: ReturnType<typeof oldRun>[]) {
  const asked: unknown[] = [];
  return {
    asked,
    request: async (method: string, params: unknown) => {
      asked.push([method, params]);
      return { runs, orphans: [], notes: [] };
    },
  };
}
const log = { warn: () => undefined } as never;
const settle = () => new Promise((r) => setTimeout(r, 10));

describe('old unreviewed attempts are offered once per window (issue 31)', () => {
  beforeEach(() => fake.reset());

  it('retention: the setting in days, 3 by default; 0 turns the offer off but the command uses 3 days', () => {
    assert.equal(retentionDays(), 3);
    fake.config.set('forge.attemptRetentionDays', 0.5);
    assert.equal(retentionDays(), 0.5);
    fake.config.set('forge.attemptRetentionDays', -2);
    assert.equal(retentionDays(), 3);
    assert.equal(olderThanSeconds(0.5), 43_200);
    assert.equal(olderThanSeconds(0), 3 * 86_400);
    assert.equal(olderThanSeconds(0.000001), 1);
    assert.equal(ageText(3 * 86_400 + 7200), '3d 2h');
    assert.equal(ageText(14 * 60 + 24), '14m');
  });

  it('after the runner first lists runs: one notice with Review List, never again in this window, nothing removed', async () => {
    const state = new ForgeState();
    const runner = fakeRunner([oldRun('run-a', 1), oldRun('run-b', 2)]);
    fake.messageAnswers = ['Review List'];
    offerOldAttempts(state, runner as never, log);
    assert.deepEqual(runner.asked, [], 'nothing is asked during activation');
    state.setRuns([]);
    await settle();
    state.setRuns([]);
    await settle();
    assert.deepEqual(runner.asked, [['runs/old', { older_than_s: 3 * 86_400 }]]);
    assert.deepEqual(
      fake.messages.map((m) => [m.level, m.text, m.items]),
      [['info', 'Forge: 2 runs not reviewed for more than 3d still have 3 forge/attempt branches.', ['Review List']]],
    );
    assert.deepEqual(
      fake.executed.map((e) => e.command),
      ['forge.discardOldAttempts'],
    );
  });

  it('says nothing when there is nothing old, or when the retention is 0', async () => {
    const quiet = fakeRunner([]);
    offerOldAttempts(new ForgeState(), quiet as never, log);
    const s1 = new ForgeState();
    offerOldAttempts(s1, quiet as never, log);
    s1.setRuns([]);
    await settle();
    assert.equal(fake.messages.length, 0);
    fake.config.set('forge.attemptRetentionDays', 0);
    const off = fakeRunner([oldRun('run-a', 1)]);
    const s2 = new ForgeState();
    offerOldAttempts(s2, off as never, log);
    s2.setRuns([]);
    await settle();
    assert.deepEqual(off.asked, []);
    assert.equal(fake.messages.length, 0);
  });
});
