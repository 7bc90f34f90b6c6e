import type { CommandReply, Evidence, InstanceCellState } from '../protocol/instanceCell.js';
import type { CellInput } from './core/instanceCellCore.js';

export interface CellStepResult {
  state: InstanceCellState;
  reply: CommandReply | null;
}

/**
 * Where an InstanceCell lives: embedded in the runner's SQLite store, or a Durable Object in
 * a Celld (or workerd) runtime behind the compatibility adapter. Each step persists the new
 * state, its alarms and its evidence atomically before answering.
 */
export interface CellHost {
  readonly kind: 'embedded' | 'celld';
  read(instanceId: string): Promise<InstanceCellState | null>;
  step(instanceId: string, input: CellInput): Promise<CellStepResult>;
  /** Fire this cell's alarms that are due (a Durable Object fires its own: returns 0). */
  fireDueAlarms(instanceId: string, now: number): Promise<number>;
  nextAlarmAt(instanceId: string): Promise<number | null>;
  evidence(instanceId: string, limit?: number): Promise<Evidence[]>;
  list(): Promise<string[]>;
}
