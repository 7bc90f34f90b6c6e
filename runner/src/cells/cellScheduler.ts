import { existsSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { admission, type CellBudget, type SlotRow } from './cellScheduling.js';

/** Where a waiting cell stands: `position` among the waiting, `ahead` cells before it (running ones included). */
export interface QueueStanding {
  position: number;
  ahead: number;
  budget: CellBudget;
}

/** The queue the scheduler steps (store/cellSlots.ts: one table for every runner process of the machine). */
export interface SlotQueue {
  enqueue(row: { pid: number; runId: string; memoryMib: number; exclusive: boolean }): number;
  step<T extends { admit: boolean }>(id: number, alive: (pid: number) => boolean, decide: (rows: SlotRow[]) => T): T;
  release(id: number): void;
}

export interface CellRequest {
  runId: string;
  memoryMib: number;
  /** Wait until no other cell runs on the machine (a crashed test cell's second try). */
  exclusive?: boolean;
  signal?: AbortSignal;
  /** Called when the cell starts waiting and whenever its standing changes. */
  onWait?: (standing: QueueStanding) => void;
}

const MiB = 1024 * 1024;

/**
 * The machine's cell budget: as many cells at once as cores (a test run is CPU-bound; the
 * attempts of one run were already limited to the cores), and their memory limits within 80%
 * of RAM. FORGE_MAX_CELLS overrides the count.
 */
export function defaultCellBudget(env: NodeJS.ProcessEnv = process.env): CellBudget {
  const asked = Number(env.FORGE_MAX_CELLS);
  const cells = Number.isInteger(asked) && asked > 0 ? asked : Math.max(1, availableParallelism());
  return { cells, memoryMib: Math.floor((totalmem() * 0.8) / MiB) };
}

const POLL_MS = 100;

/**
 * One cell scheduler per runner, shared by every run it serves (CLI, RPC, extension), and
 * through the store's queue with every other runner of this user on the machine: a cell runs
 * only when the machine's budget has room, and runs take turns fairly.
 */
export class CellScheduler {
  private readonly wakers = new Set<() => void>();

  constructor(
    private readonly queue: SlotQueue,
    readonly budget: CellBudget = defaultCellBudget(),
    private readonly alive: (pid: number) => boolean = (pid) => existsSync(`/proc/${pid}`),
  ) {}

  /** Resolves with the release of the slot once the cell may run; rejects when the signal aborts first. */
  async acquire(req: CellRequest): Promise<() => void> {
    const id = this.queue.enqueue({ pid: process.pid, runId: req.runId, memoryMib: req.memoryMib, exclusive: req.exclusive ?? false });
    let last = '';
    try {
      for (;;) {
        if (req.signal?.aborted) throw new Error('cancelled');
        const d = this.queue.step(id, this.alive, (rows) => admission(rows, id, this.budget));
        if (d.admit) break;
        const key = `${d.position}/${d.ahead}`;
        if (key !== last) req.onWait?.({ position: d.position, ahead: d.ahead, budget: this.budget });
        last = key;
        await this.nap(req.signal);
      }
    } catch (e) {
      this.queue.release(id);
      throw e;
    }
    return this.releaseOf(id);
  }

  /**
   * A slot now or never: the release when the machine's budget has room and no cell waits
   * (work that only uses idle cores, such as a ground truth started early), else null.
   */
  acquireIfFree(req: Omit<CellRequest, 'onWait' | 'exclusive'>): (() => void) | null {
    if (req.signal?.aborted) return null;
    const id = this.queue.enqueue({ pid: process.pid, runId: req.runId, memoryMib: req.memoryMib, exclusive: false });
    // Behind nobody: a cell that waits is real work, which idle-core work never delays.
    const d = this.queue.step(id, this.alive, (rows) =>
      rows.some((r) => r.state === 'waiting' && r.id !== id) ? { admit: false } : admission(rows, id, this.budget),
    );
    if (!d.admit) {
      this.queue.release(id);
      return null;
    }
    return this.releaseOf(id);
  }

  /** Gives slot `id` back once, and wakes this runner's waiting cells. */
  private releaseOf(id: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.queue.release(id);
      for (const wake of [...this.wakers]) wake();
    };
  }

  /** How many cells of any runner of the machine wait for a slot now. */
  waiting(): number {
    return this.queue.step(-1, this.alive, (rows) => ({ admit: false, n: rows.filter((r) => r.state === 'waiting').length })).n;
  }

  /** Until another cell of this runner ends, the poll interval passes (another runner's cell), or the signal aborts. */
  private nap(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, POLL_MS);
      this.wakers.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
