import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CellScheduler } from '../../../runner/src/cells/cellScheduler.js';
import { admission, type SlotRow, waitingOrder } from '../../../runner/src/cells/cellScheduling.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';

const row = (id: number, run: string, state: SlotRow['state'], extra: Partial<SlotRow> = {}): SlotRow => ({
  id,
  pid: 1,
  run_id: run,
  memory_mib: 2048,
  exclusive: false,
  state,
  ticket: id,
  ...extra,
});
const budget = { cells: 2, memoryMib: 24_000 };

describe('the machine’s cell queue (issue 27: one scheduler for all runs)', () => {
  it('a cell starts when the machine has room, else says where it stands', () => {
    assert.deepEqual(admission([row(1, 'a', 'running'), row(2, 'a', 'waiting')], 2, budget), { admit: true });
    assert.deepEqual(admission([row(1, 'a', 'running'), row(2, 'a', 'running'), row(3, 'b', 'waiting')], 3, budget), {
      admit: false,
      position: 1,
      ahead: 2,
    });
    assert.deepEqual(admission([row(1, 'a', 'running', { memory_mib: 23_000 }), row(2, 'b', 'waiting')], 2, budget).admit, false);
    // Alone, a cell larger than the budget still runs (it would never run otherwise).
    assert.deepEqual(admission([row(1, 'a', 'waiting', { memory_mib: 99_999 })], 1, budget), { admit: true });
  });

  it('runs take turns: the run with fewer cells running goes first, then arrival', () => {
    const rows = [row(1, 'a', 'running'), row(2, 'a', 'waiting'), row(3, 'b', 'waiting'), row(4, 'a', 'waiting'), row(5, 'c', 'waiting')];
    assert.deepEqual(
      waitingOrder(rows).map((r) => r.id),
      [3, 5, 2, 4],
    );
    assert.deepEqual(admission(rows, 2, budget), { admit: false, position: 3, ahead: 3 });
    assert.deepEqual(admission(rows, 3, budget), { admit: true });
  });

  it('an exclusive cell (a crashed test’s second try) waits for an empty machine, and nothing passes it', () => {
    const rows = [row(1, 'a', 'running'), row(2, 'b', 'waiting', { exclusive: true }), row(3, 'c', 'waiting')];
    assert.equal(admission(rows, 2, budget).admit, false);
    assert.equal(admission(rows, 3, budget).admit, false, 'the cell behind the exclusive one waits too');
    assert.deepEqual(admission([row(2, 'b', 'waiting', { exclusive: true })], 2, budget), { admit: true });
    assert.equal(admission([row(2, 'b', 'running', { exclusive: true }), row(3, 'c', 'waiting')], 3, budget).admit, false);
  });

  describe('through the store, as two runner processes share it', () => {
    let dir: string;
    let stores: RunStore[];
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'forge-slots-'));
      stores = [new RunStore(openStore(join(dir, 'forge.db'))), new RunStore(openStore(join(dir, 'forge.db')))];
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('a second runner’s cell waits for the first’s to end, then starts; its standing is said', async () => {
      const first = new CellScheduler(stores[0]!.cellSlots(), { cells: 1, memoryMib: 24_000 });
      const second = new CellScheduler(stores[1]!.cellSlots(), { cells: 1, memoryMib: 24_000 });
      const release = await first.acquire({ runId: 'run-a', memoryMib: 2048 });
      const standings: number[] = [];
      let started = false;
      const waiting = second.acquire({ runId: 'run-b', memoryMib: 2048, onWait: (s) => standings.push(s.ahead) }).then((r) => {
        started = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(started, false, 'started while the only cell of the machine was taken');
      assert.deepEqual(standings, [1]);
      release();
      (await waiting)();
      assert.equal(started, true);
      assert.deepEqual(stores[0]!.cellSlots().rows(), []);
    });

    it('idle-core work (an early ground truth) gets a slot only when one is free and no cell waits, and leaves no row otherwise', async () => {
      const scheduler = new CellScheduler(stores[0]!.cellSlots(), { cells: 2, memoryMib: 24_000 });
      const other = new CellScheduler(stores[1]!.cellSlots(), { cells: 2, memoryMib: 24_000 });
      const held = await scheduler.acquire({ runId: 'run-a', memoryMib: 2048 });
      const idle = scheduler.acquireIfFree({ runId: 'run-a', memoryMib: 2048 });
      assert.ok(idle, 'one of two slots was free');
      assert.equal(scheduler.acquireIfFree({ runId: 'run-a', memoryMib: 2048 }), null, 'both slots are taken');
      idle();
      // A cell of another runner waits (behind an exclusive one): idle-core work never goes before it.
      const exclusive = other.acquire({ runId: 'run-b', memoryMib: 2048, exclusive: true });
      await new Promise((r) => setTimeout(r, 150));
      assert.equal(scheduler.acquireIfFree({ runId: 'run-a', memoryMib: 2048 }), null, 'a cell waits');
      held();
      (await exclusive)();
      const free = scheduler.acquireIfFree({ runId: 'run-a', memoryMib: 2048 });
      assert.ok(free);
      free();
      assert.deepEqual(stores[0]!.cellSlots().rows(), []);
    });

    it('a slot held by a process that is gone is freed; a cancelled wait leaves no row', async () => {
      const slots = stores[0]!.cellSlots();
      const id = slots.enqueue({ pid: 2 ** 22 + 7, runId: 'dead', memoryMib: 2048, exclusive: false });
      slots.step(
        id,
        () => true,
        () => ({ admit: true }),
      );
      const scheduler = new CellScheduler(stores[1]!.cellSlots(), { cells: 1, memoryMib: 24_000 });
      (await scheduler.acquire({ runId: 'run-b', memoryMib: 2048 }))();
      const hold = await scheduler.acquire({ runId: 'run-c', memoryMib: 2048 });
      const abort = new AbortController();
      const waiting = scheduler.acquire({ runId: 'run-d', memoryMib: 2048, signal: abort.signal });
      setTimeout(() => abort.abort(), 150);
      await assert.rejects(waiting);
      hold();
      assert.deepEqual(slots.rows(), []);
    });
  });
});
