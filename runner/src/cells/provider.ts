import type { CellSpec, CellSpecInput } from '../protocol/cellSpec.js';
import { CellSpecSchema } from '../protocol/cellSpec.js';
import type { CellResult, ProviderName } from '../protocol/cellResult.js';
import type { ProviderHealth } from '../protocol/health.js';
import { describeZodError, InputError } from '../protocol/inputError.js';

export interface CellRunOptions {
  /** Aborting kills the cell's whole process tree; the result has killed_by=cancel. */
  signal?: AbortSignal;
  /** Live output (merged stdout+stderr) as it arrives, for progress displays. */
  onOutput?: (chunk: Buffer) => void;
}

/** One way of running a CellSpec in isolation. Each provider lives in its own file. */
export interface CellProvider {
  readonly name: ProviderName;
  health(): Promise<ProviderHealth>;
  run(spec: CellSpecInput, options?: CellRunOptions): Promise<CellResult>;
  /** Resolves once every finished cell's leftovers (cgroups, scratch dirs) are gone. */
  drain(): Promise<void>;
  /**
   * Why this provider's cells cannot have allow_net here, and the way out; null (or no such
   * method) when they can. A fix run that needs the network asks before anything is recorded.
   */
  egressRefusal?(): Promise<{ why: string; fix: string } | null>;
}

/** Validates untrusted CellSpec input; the error is one line naming the field. */
export function parseCellSpec(input: unknown): CellSpec {
  const parsed = CellSpecSchema.safeParse(input);
  if (!parsed.success) throw new InputError(describeZodError('CellSpec', parsed.error));
  return parsed.data;
}
