/**
 * Teardown a provider runs after a cell's result is out (a container's or a task's removal, a
 * layer's unmount): off the result's clock, never lost. drain() waits until none is left,
 * including any tracked while it waits. A failed cleanup is not the cell's failure.
 */
export class PendingCleanups {
  private readonly pending = new Set<Promise<void>>();

  track(work: Promise<unknown>): void {
    const p: Promise<void> = work
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** The cleanups pending now (for work that must come after them). */
  now(): Promise<void>[] {
    return [...this.pending];
  }

  get size(): number {
    return this.pending.size;
  }

  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
