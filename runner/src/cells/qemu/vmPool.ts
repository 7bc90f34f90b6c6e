import { MicroVm, MIN_MEMORY_MIB, type VmRuntime, type VmShape, shapeKey } from './microVm.js';

export interface PoolSettings {
  size: number;
  budgetMib: number;
}

/**
 * Pure: the pool's size and memory budget from FORGE_QEMU_POOL / FORGE_QEMU_POOL_MEMORY_MIB,
 * else from the machine: one VM per core (at most 4) within a quarter of its memory.
 * `cap` is the caller's own bound (a one-shot CLI cell: 0, nothing to boot ahead for).
 */
export function poolSettings(
  env: NodeJS.ProcessEnv,
  machine: { cores: number; memoryMib: number },
  cap: number | undefined,
): PoolSettings | { error: string } {
  const budgetText = env.FORGE_QEMU_POOL_MEMORY_MIB;
  const budgetMib = budgetText === undefined || budgetText === '' ? Math.floor(machine.memoryMib / 4) : Number(budgetText);
  if (!Number.isInteger(budgetMib) || budgetMib < 0)
    return { error: `FORGE_QEMU_POOL_MEMORY_MIB=${budgetText} is not a whole number of MiB; unset it or give e.g. 4096` };
  const sizeText = env.FORGE_QEMU_POOL;
  let size = Math.min(4, Math.max(1, machine.cores));
  if (sizeText !== undefined && sizeText !== '') {
    size = Number(sizeText);
    if (!Number.isInteger(size) || size < 0 || size > 64)
      return { error: `FORGE_QEMU_POOL=${sizeText} is not a pool size from 0 to 64; 0 turns the pool off` };
  }
  return { size: cap === undefined ? size : Math.min(size, Math.max(0, cap)), budgetMib };
}

/** Pure: how many more VMs of `memoryMib` to boot now. */
export function vmsToBoot(p: PoolSettings, waiting: number, memoryMib: number, poolMemoryMib: number): number {
  const want = Math.max(0, p.size - waiting);
  const room = Math.floor(Math.max(0, p.budgetMib - poolMemoryMib) / Math.max(MIN_MEMORY_MIB, memoryMib));
  return Math.min(want, room);
}

/** Pools open in this process (a fix run's provider holds one): health reports them all. */
const livePools = new Set<VmPool>();

/** What every open pool of this process holds now; null when none is open. */
export function livePoolCounts(): { ready: number; booting: number; memoryMib: number } | null {
  if (livePools.size === 0) return null;
  const sum = { ready: 0, booting: 0, memoryMib: 0 };
  for (const p of livePools) {
    const c = p.counts();
    sum.ready += c.ready;
    sum.booting += c.booting;
    sum.memoryMib += c.memoryMib;
  }
  return sum;
}

/** How long a cell waits for a pooled VM still booting before taking it as it is. */
const BOOT_WAIT_MS = 60_000;

/** VMs booted ahead of need, per shape. A VM leaves the pool when a cell takes it and never returns. */
export class VmPool {
  private readonly waiting = new Map<string, MicroVm[]>();
  private closed = false;

  constructor(
    private readonly settings: PoolSettings,
    private readonly rt: () => VmRuntime,
  ) {
    livePools.add(this);
  }

  /** A VM of this shape: a waiting one (ready first) or, on a miss, one booted now. Refills behind it. */
  async take(shape: VmShape): Promise<{ vm: MicroVm; hit: boolean }> {
    const key = shapeKey(shape);
    let pick: MicroVm | undefined;
    // Two pooled VMs that die in a row say something is wrong with booting: the cell boots its
    // own, whose failure it then reports.
    for (let tries = 0; tries < 2; tries++) {
      const list = (this.waiting.get(key) ?? []).filter((v) => v.state === 'ready' || v.state === 'booting');
      pick = list.find((v) => v.state === 'ready') ?? list[0];
      this.waiting.set(
        key,
        list.filter((v) => v !== pick),
      );
      if (!pick) break;
      this.refill(shape);
      if (pick.state === 'ready') break;
      // A VM still booting may yet die (its boot failed, the kernel killed it): the cell is not
      // given a dead one but the next, or a fresh boot. Bounded: a boot that neither reports
      // nor dies is handed over as before, and the cell's own timeout ends it.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pick.whenWaiting(), new Promise((r) => (timer = setTimeout(r, BOOT_WAIT_MS)))]);
      clearTimeout(timer);
      if (pick.state !== 'dead') break;
      await pick.destroy();
      pick = undefined;
    }
    let vm = pick;
    if (!vm) {
      vm = new MicroVm(shape, this.rt());
      try {
        await vm.boot();
      } catch (e) {
        await vm.destroy();
        throw e;
      }
    }
    // On a miss the cell waits for this boot: replacements start once it is over, so on a
    // small machine they do not slow the one boot a cell is waiting for.
    if (!pick) void vm.whenWaiting().then(() => this.refill(shape));
    return { vm, hit: pick !== undefined };
  }

  /** Boots VMs of this shape in the background until the pool is full (or its budget used). */
  refill(shape: VmShape): void {
    if (this.closed || this.settings.size === 0) return;
    const key = shapeKey(shape);
    const list = this.waiting.get(key) ?? [];
    const n = vmsToBoot(this.settings, list.length, shape.memoryMib, this.memoryInUse());
    for (let i = 0; i < n; i++) {
      const vm = new MicroVm(shape, this.rt());
      list.push(vm);
      vm.boot().catch(async () => {
        this.waiting.set(
          key,
          (this.waiting.get(key) ?? []).filter((v) => v !== vm),
        );
        await vm.destroy();
      });
      // A waiting VM that dies (its boot failed) leaves the pool, and what the runner holds
      // for it goes (its sockets would keep a finished run's process alive).
      void vm.exited.then(async () => {
        const left = this.waiting.get(key) ?? [];
        if (!left.includes(vm)) return;
        this.waiting.set(
          key,
          left.filter((v) => v !== vm),
        );
        await vm.destroy();
      });
    }
    this.waiting.set(key, list);
  }

  private memoryInUse(): number {
    let mib = 0;
    for (const list of this.waiting.values()) for (const v of list) mib += Math.max(MIN_MEMORY_MIB, v.shape.memoryMib);
    return mib;
  }

  counts(): { ready: number; booting: number; size: number; budgetMib: number; memoryMib: number } {
    let ready = 0;
    let booting = 0;
    for (const list of this.waiting.values())
      for (const v of list) {
        if (v.state === 'ready') ready++;
        else if (v.state === 'booting') booting++;
      }
    return { ready, booting, size: this.settings.size, budgetMib: this.settings.budgetMib, memoryMib: this.memoryInUse() };
  }

  /** Destroys every waiting VM; nothing boots afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    livePools.delete(this);
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    await Promise.all(all.map((v) => v.destroy()));
  }
}
