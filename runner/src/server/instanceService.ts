import type { InstanceCellState } from '../protocol/instanceCell.js';
import type { InstanceCoordinator } from '../instances/instanceCoordinator.js';

/**
 * Keeps instances moving in a long-lived runner: one background driver per instance (a new
 * command while one runs just asks it to go round again), and at start every instance with
 * open operations or pending alarms is resumed, so alarms persisted as rows are re-armed.
 */
export class InstanceService {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private closed = false;

  constructor(
    readonly coordinator: InstanceCoordinator,
    private readonly onChange: (instanceId: string, state: InstanceCellState) => void,
    private readonly onError: (instanceId: string, error: Error) => void,
  ) {}

  async resumeAll(): Promise<void> {
    const ids = new Set([
      ...(await this.coordinator.cells.list()),
      ...this.coordinator.management.store.openOperations().map((o) => o.instance_id),
    ]);
    for (const id of ids) this.kick(id);
  }

  kick(instanceId: string): void {
    if (this.closed) return;
    if (this.running.has(instanceId)) {
      this.again.add(instanceId);
      return;
    }
    const run = (async () => {
      try {
        do {
          this.again.delete(instanceId);
          await this.coordinator.drive(instanceId, {
            timeoutMs: 24 * 3600_000,
            onState: (s) => this.onChange(instanceId, s),
            signal: this.abort.signal,
          });
        } while (this.again.has(instanceId) && !this.closed);
      } catch (e) {
        this.onError(instanceId, e as Error);
      } finally {
        this.running.delete(instanceId);
      }
    })();
    this.running.set(instanceId, run);
  }

  private readonly abort = new AbortController();

  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    await Promise.all([...this.running.values()]);
  }
}
