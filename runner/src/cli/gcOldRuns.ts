import { join } from 'node:path';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { InputError } from '../protocol/inputError.js';
import { openStore } from '../store/openStore.js';
import { RunStore } from '../store/runStore.js';
import { discardOldRuns, findOldAttempts, removeOrphanBranches } from '../workspace/oldAttempts.js';
import { formatAge, parseDuration } from '../workspace/oldRunSelection.js';
import { printable } from './formatCellResult.js';

export interface GcOldRunsFlags {
  olderThan: string;
  yes?: boolean;
  dryRun?: boolean;
  json?: boolean;
  /** Only this repository; every repository the store knows when absent. */
  repo?: string;
}

/**
 * `gc --older-than`: lists the runs nobody reviewed for that long (their branches and
 * worktrees) and the forge/attempt/* branches of runs the store no longer knows, in every
 * repository the store knows. Removes them only with --yes: without it this is a dry run.
 */
export async function gcOldRuns(flags: GcOldRunsFlags): Promise<void> {
  // Checked before anything is read or removed: a bad flag changes nothing.
  const olderThanS = parseDuration(flags.olderThan);
  if (flags.yes && flags.dryRun) throw new InputError('--yes and --dry-run contradict each other; pass one of them');
  const remove = flags.yes === true;
  const store = new RunStore(openStore(join(runnerStateDir(), 'forge.db')));
  const options = { olderThanS, ...(flags.repo ? { repos: [flags.repo] } : {}) };
  const found = await findOldAttempts(store, options);
  const outcomes = remove
    ? await discardOldRuns(
        store,
        found.runs.map((r) => r.run_id),
        options,
      )
    : [];
  const orphansRemoved = remove ? await removeOrphanBranches(store, found.orphans, options) : [];
  if (flags.json) {
    process.stdout.write(
      JSON.stringify(
        { dry_run: !remove, older_than_s: olderThanS, ...found, discarded: outcomes, orphans_removed: orphansRemoved },
        null,
        2,
      ) + '\n',
    );
    return;
  }
  const w = (line: string) => process.stdout.write(printable(line) + '\n');
  for (const r of found.runs) {
    const o = outcomes.find((x) => x.run_id === r.run_id);
    const action = !remove ? 'would remove' : o?.discarded ? 'removed' : 'left';
    w(`${action.padEnd(12)} run ${r.run_id} (${r.status}, not reviewed for ${formatAge(r.age_s)}) in ${r.repo}: ${r.issue}`);
    for (const b of r.branches) w(`             branch ${b}`);
    for (const t of r.worktrees) w(`             worktree ${t}`);
    if (o && !o.discarded) w(`             ${o.reason ?? ''}`);
  }
  for (const x of found.orphans) {
    const action = !remove ? 'would remove' : orphansRemoved.includes(`${x.repo}: branch ${x.branch}`) ? 'removed' : 'left';
    w(`${action.padEnd(12)} branch ${x.branch} in ${x.repo}: no run in the store owns it (made or moved ${formatAge(x.age_s)} ago)`);
  }
  for (const n of found.notes) w(`note: ${n}`);
  const runs = remove ? outcomes.filter((o) => o.discarded).length : found.runs.length;
  const branches = remove ? orphansRemoved.length : found.orphans.length;
  w(
    `${runs} run(s) not reviewed for more than ${flags.olderThan} and ${branches} orphan branch(es) ${remove ? 'removed' : 'to remove'}` +
      (remove || runs + branches === 0 ? '' : '; nothing was removed: pass --yes to remove them'),
  );
}
