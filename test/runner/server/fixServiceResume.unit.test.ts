import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixStartParamsSchema } from '../../../runner/src/protocol/fixRequest.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { ModelReplyRequestSchema, RPC_FIX_NOTIFICATIONS, RunSnapshotSchema } from '../../../runner/src/protocol/rpcFix.js';
import { FixService } from '../../../runner/src/server/fixService.js';
import { type FakeCell, type FakeCellOutcome, FakeCellProvider, pytestOutput } from '../../helpers/fakeCellProvider.js';
import { makeRepo } from '../../helpers/gitRepo.js';
import { waitFor } from '../../helpers/waitFor.js';

/**
 * The serving runner's cancel and fix/resume, in process: FixService with the fake cell
 * provider and a client-side model answered here. rpcFix.test.ts checks the same methods over
 * JSON-RPC against the real runner.
 */

const BUGGY = 'def average(values):\n    return sum(values) / (len(values) + 1)\n';
const TEST_CMD = 'python3 -m pytest -q';
const FIX_CALL = {
  id: 'c0',
  name: 'edit_file',
  arguments: { path: 'calc.py', old_string: 'return sum(values) / (len(values) + 1)', new_string: 'return sum(values) / len(values)' },
};
const SLOW_CALL = { id: 'c0', name: 'run_command', arguments: { command: 'sleep 30' } };
const FINISH_CALL = { id: 'c1', name: 'finish', arguments: { summary: 'done' } };

const calcTests = (cell: FakeCell): FakeCellOutcome =>
  pytestOutput({ 'test_calc.py::test_average': (cell.read('calc.py') ?? '').includes('return sum(values) / len(values)\n') });
/** Test runs read calc.py; `hang` names the purposes whose cells never end by themselves. */
const script =
  (hang: string[] = []) =>
  (cell: FakeCell): FakeCellOutcome =>
    hang.includes(cell.purpose)
      ? { exit_code: 0, output: '', hang: true }
      : cell.cmd === TEST_CMD
        ? calcTests(cell)
        : { exit_code: 0, output: '' };

type Finished = { run_id: string; status: string; error: string | null };

describe('FixService: cancelled runs and fix/resume (fake cells, in process)', function () {
  let stateDir: string;
  let repo: { dir: string; cleanup: () => void };
  let provider: FakeCellProvider;
  let service: FixService;
  let finished: Finished[];
  let snapshots: ReturnType<typeof RunSnapshotSchema.parse>[];
  /** The model's first turn: the fix, or a command that hangs until the cancel. */
  let firstCall: typeof FIX_CALL | typeof SLOW_CALL;

  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'forge-fixservice-'));
    repo = makeRepo({ 'calc.py': BUGGY, 'test_calc.py': 'from calc import average\n' });
    provider = new FakeCellProvider(script());
    finished = [];
    snapshots = [];
    firstCall = FIX_CALL;
    service = newService();
  });
  const newService = () =>
    new FixService(
      stateDir,
      {
        notify: (method, params) => {
          if (method === 'fix/finished') finished.push(RPC_FIX_NOTIFICATIONS['fix/finished'].parse(params));
          if (method === 'runs/changed') snapshots.push(RPC_FIX_NOTIFICATIONS['runs/changed'].parse(params));
        },
        askClientModel: async (raw) => {
          const req = ModelReplyRequestSchema.parse(raw);
          return { content: null, tool_calls: [req.turn_index === 0 ? firstCall : FINISH_CALL], tokens: 1 };
        },
        log: () => undefined,
      },
      () => provider,
    );
  afterEach(async () => {
    await service.close();
    repo.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  const start = (attempts: number) =>
    service.start(
      FixStartParamsSchema.parse({ repo: repo.dir, issue: 'average is wrong', model: 'client:vscode-lm', attempts, test_cmd: TEST_CMD }),
    );
  const ended = (runId: string, nth: number) =>
    waitFor(() => finished.filter((f) => f.run_id === runId)[nth - 1], 30_000, `fix/finished #${nth} of ${runId}`);

  it('the runner stopping mid-run (the window closed) leaves the run interrupted, not cancelled, and resumable (issue 27)', async () => {
    provider.setScript(script(['baseline']));
    let closing: Promise<void> | null = null;
    provider.onCell = (c) => {
      if (c.purpose === 'baseline') closing = service.close();
    };
    const { run_id: runId } = await start(2);
    await waitFor(() => closing, 30_000, 'the baseline cell');
    await closing;
    const snap = RunSnapshotSchema.parse(service.snapshot(runId));
    assert.equal(snap.run.status, 'interrupted');
    // They had started with the baseline: interrupted, for a resume to redo.
    assert.deepEqual(
      snap.attempts.map((a) => a.status),
      ['interrupted', 'interrupted'],
    );
  });

  it("an attempt whose cell waits for the machine's budget is shown waiting, with the cells ahead of it (issue 27)", async () => {
    const before = process.env.FORGE_MAX_CELLS;
    process.env.FORGE_MAX_CELLS = '1';
    try {
      await service.close();
      service = newService();
    } finally {
      if (before === undefined) delete process.env.FORGE_MAX_CELLS;
      else process.env.FORGE_MAX_CELLS = before;
    }
    // One attempt's command holds the one cell; the other's waits behind it.
    firstCall = SLOW_CALL;
    provider.setScript(script(['run_command']));
    const { run_id: runId } = await start(2);
    const waiting = await waitFor(
      () => service.snapshot(runId)?.attempts.find((a) => a.waiting_for_cell != null),
      30_000,
      'an attempt waiting for a cell',
    );
    assert.equal(waiting.status, 'running');
    assert.equal(waiting.waiting_for_cell, 1);
    assert.equal(RunSnapshotSchema.parse(service.snapshot(runId)).attempts.filter((a) => a.waiting_for_cell != null).length, 1);
    service.cancel(runId);
    await waitFor(() => service.snapshot(runId)?.run.status === 'cancelled' || null, 30_000, 'the cancel');
    assert.ok(
      service.snapshot(runId)!.attempts.every((a) => a.waiting_for_cell == null),
      'no attempt waits once the run ended',
    );
  });

  it('a cancel during the baseline: run cancelled, the attempts that started with it cancelled, the baseline cell cancelled (not exit 137); fix/resume finishes it', async () => {
    provider.setScript(script(['baseline']));
    provider.onCell = (c) => {
      if (c.purpose === 'baseline') service.cancel(c.spec.labels!['forge.run']!);
    };
    const { run_id: runId } = await start(2);
    assert.deepEqual(await ended(runId, 1), { run_id: runId, status: 'cancelled', error: 'cancelled' });
    const snap = RunSnapshotSchema.parse(service.snapshot(runId));
    assert.equal(snap.run.status, 'cancelled');
    // Both started with the baseline (the machine runs two at a time) and were stopped unjudged.
    assert.deepEqual(
      snap.attempts.map((a) => [a.status, a.green]),
      [
        ['cancelled', null],
        ['cancelled', null],
      ],
    );
    assert.deepEqual(
      snap.cells.filter((c) => c.purpose === 'baseline').map((c) => [c.purpose, c.exit_code, c.killed_by]),
      [['baseline', 137, 'cancel']],
    );
    assert.ok(
      snap.cells.every((c) => c.purpose === 'baseline' || c.purpose === 'run_command'),
      'no verdict cell ran',
    );

    provider.onCell = null;
    provider.setScript(script());
    await assert.rejects(service.resume('run-nope'), (e: Error) => e instanceof InputError && /^no run run-nope/.test(e.message));
    assert.deepEqual(await service.resume(runId), { run_id: runId });
    assert.deepEqual(await ended(runId, 2), { run_id: runId, status: 'fixed', error: null });
    const after = service.snapshot(runId)!;
    assert.deepEqual(
      after.attempts.map((a) => a.status),
      ['finished', 'finished'],
    );
    assert.ok(
      after.cells.some((c) => c.purpose === 'baseline' && c.killed_by === null),
      'the baseline ran again (it never finished)',
    );
    await assert.rejects(
      service.resume(runId),
      (e: Error) => e instanceof InputError && e.message === `run ${runId} already ended (fixed); start a new run`,
    );
  });

  it('a run in progress is not resumed; Resume right after Cancel waits for it to stop, then continues it', async () => {
    firstCall = SLOW_CALL;
    provider.setScript(script(['run_command']));
    const { run_id: runId } = await start(1);
    await waitFor(() => provider.cells.some((c) => c.purpose === 'run_command'), 30_000, 'the slow command');
    await assert.rejects(
      service.resume(runId),
      (e: Error) => e instanceof InputError && e.message === `run ${runId} is in progress in this runner; nothing to resume`,
    );
    provider.setScript(script());
    firstCall = FIX_CALL;
    assert.equal(service.cancel(runId), true);
    const resumed = service.resume(runId);
    assert.deepEqual(await ended(runId, 1), { run_id: runId, status: 'cancelled', error: 'cancelled' });
    assert.ok(
      snapshots.some((s) => s.run.run_id === runId && s.run.status === 'cancelled' && s.attempts[0]!.status === 'cancelled'),
      'the attempt the cancel stopped was shown cancelled',
    );
    assert.deepEqual(await resumed, { run_id: runId });
    assert.deepEqual(await ended(runId, 2), { run_id: runId, status: 'fixed', error: null });
    assert.equal(service.snapshot(runId)!.attempts[0]!.status, 'finished');
  });
});
