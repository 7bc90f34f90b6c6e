import assert from 'node:assert/strict';
import { announceInterruptedRuns } from '../../extension/src/flows/announceInterrupted.js';
import { ForgeState } from '../../extension/src/forgeState.js';
import type { RunSummary } from '../../runner/src/protocol/rpcFix.js';
import { fake, fakeMemento } from './fakes/vscode.js';

const run = (over: Partial<RunSummary>): RunSummary => ({
  run_id: 'run-1',
  status: 'interrupted',
  created_at: '2026-12-03T10:00:00Z',
  updated_at: '2026-12-03T10:05:00Z',
  repo: '/w/app',
  base_commit: 'abc',
  issue_title: 'Sum of an empty list throws',
  test_cmd: 'npm test',
  provider: 'host',
  image: '',
  model: 'replay:x',
  attempts: 3,
  winner_attempt: null,
  review: null,
  error: null,
  environment: null,
  ending: null,
  ...over,
});

describe('a run interrupted by a closed window is said when the window opens again (issue 27)', () => {
  beforeEach(() => fake.reset());

  it('once per run, for this window’s repositories, recent ones only, with Resume', async () => {
    const state = new ForgeState();
    state.setScope(['/w/app']);
    const memento = fakeMemento();
    const now = () => Date.parse('2026-12-03T12:00:00Z');
    const sub = announceInterruptedRuns(state, memento as never, now);
    state.setRuns([
      run({}),
      run({ run_id: 'run-2', repo: '/elsewhere' }),
      run({ run_id: 'run-3', updated_at: '2026-11-01T00:00:00Z' }),
      run({ run_id: 'run-4', status: 'cancelled' }),
    ]);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      fake.messages.map((m) => [m.level, m.text, m.items]),
      [
        [
          'warning',
          'Forge: "Sum of an empty list throws" was interrupted: its runner stopped while it ran (the window closed). Resume goes on from the attempts that finished.',
          ['Resume', 'Show Attempts'],
        ],
      ],
    );
    sub.dispose();
    // The next window (a reload) does not say it again.
    fake.reset();
    const again = new ForgeState();
    again.setScope(['/w/app']);
    announceInterruptedRuns(again, memento as never, now);
    again.setRuns([run({})]);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(fake.messages, []);
  });
});
