import type { RpcFixResult } from '../protocol/rpcFix.js';
import type { RunRow } from '../store/runStore.js';
import { discardOldRuns, findOldAttempts, runningElsewhere } from '../workspace/oldAttempts.js';
import type { FixService } from './fixService.js';

/** In progress: this runner runs it, or a live runner on this machine does (another window's). */
const inProgress = (fixes: FixService) => (run: RunRow) => fixes.isActive(run.id) || runningElsewhere(run);

/** runs/old: what Discard Old Attempts offers; nothing is removed. */
export async function listOldRuns(fixes: FixService, olderThanS: number): Promise<RpcFixResult<'runs/old'>> {
  const found = await findOldAttempts(fixes.store, { olderThanS, inProgress: inProgress(fixes) });
  return {
    runs: found.runs.map(({ issue, ...r }) => ({ ...r, issue_title: issue })),
    orphans: found.orphans,
    notes: found.notes,
  };
}

/** runs/discardOld: discards the runs the user confirmed, each checked again first. */
export async function discardOld(fixes: FixService, runIds: string[], olderThanS: number): Promise<RpcFixResult<'runs/discardOld'>> {
  const results = await discardOldRuns(fixes.store, runIds, { olderThanS, inProgress: inProgress(fixes) });
  for (const r of results) if (r.discarded) fixes.announce(r.run_id);
  return { results };
}
