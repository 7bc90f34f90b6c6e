import type { Command } from 'commander';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { InputError } from '../protocol/inputError.js';
import { ApplySelectionSchema } from '../protocol/rpcFix.js';
import { EXIT_FAILED } from './exitCodes.js';
import { printable } from './formatCellResult.js';

/**
 * `runs hunks`, `runs apply` and `runs undo-apply`: the editor's Apply Part of Attempt, Apply
 * with a 3-way merge and Undo Apply from a shell, through the same FixService methods (same
 * checks, same undo records in the state dir).
 */
export function registerRunsApplyCommands(runs: Command): void {
  // Loaded when one of these runs: runs list and show stay light.
  const service = async () =>
    new (await import('../server/fixService.js')).FixService(runnerStateDir(), {
      notify: () => undefined,
      askClientModel: () => Promise.reject(new Error('no client')),
      log: () => undefined,
    });
  const attemptOf = (raw?: string): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!/^\d{1,2}$/.test(raw) || n > 63)
      throw new InputError(`--attempt ${raw}: expected an attempt index 0-63 (see forge-runner runs show)`);
    return n;
  };
  const list = (raw?: string) =>
    raw === undefined
      ? undefined
      : raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);

  runs
    .command('hunks')
    .description("An attempt's files and hunks with the ids runs apply --hunks takes (the winner unless --attempt)")
    .argument('<run_id>')
    .option('--attempt <n>', 'another attempt than the winner')
    .option('--json', 'print JSON')
    .action(async (runId: string, flags: { attempt?: string; json?: boolean }) => {
      const r = await (await service()).reviewHunks(runId, attemptOf(flags.attempt));
      if (flags.json) return void process.stdout.write(JSON.stringify(r, null, 2) + '\n');
      for (const f of r.files) {
        process.stdout.write(
          printable(`${f.id.padEnd(8)} ${f.path}${f.whole ? `  (${f.whole}: applied whole, --files ${f.id})` : ''}`) + '\n',
        );
        for (const h of f.hunks) process.stdout.write(printable(`  ${h.id.padEnd(8)} +${h.added} -${h.removed}  ${h.header}`) + '\n');
      }
    });

  runs
    .command('apply')
    .description("Apply an attempt's change (or the chosen hunks and files) to the run's repository, all or nothing")
    .argument('<run_id>')
    .option('--attempt <n>', 'another attempt than the winner')
    .option('--hunks <ids>', 'only these hunks, comma-separated ids from runs hunks')
    .option('--files <ids>', 'only these files (whole), comma-separated file ids from runs hunks (f0,f2)')
    .option('--merge', 'when the checkout changed, merge 3-way (conflicts left as markers; runs undo-apply restores)')
    .option('--json', 'print JSON')
    .action(async (runId: string, flags: { attempt?: string; hunks?: string; files?: string; merge?: boolean; json?: boolean }) => {
      const chosen = flags.hunks !== undefined || flags.files !== undefined;
      const parsed = ApplySelectionSchema.safeParse({
        ...(flags.hunks !== undefined ? { hunks: list(flags.hunks) } : {}),
        ...(flags.files !== undefined ? { files: list(flags.files) } : {}),
      });
      if (!parsed.success)
        throw new InputError(`--hunks/--files: ${parsed.error.issues[0]?.message ?? 'invalid'}; see forge-runner runs hunks ${runId}`);
      const r = await (await service()).apply(runId, attemptOf(flags.attempt), chosen ? parsed.data : undefined, flags.merge === true);
      if (flags.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
      else if (!r.applied)
        process.stdout.write(
          printable(
            `nothing was applied: ${r.files
              .filter((f) => !f.ok)
              .map((f) => `${f.path} (${f.reason ?? 'does not apply'})`)
              .join('; ')}`,
          ) + '\n',
        );
      else {
        process.stdout.write(
          printable(`applied attempt ${r.attempt} to ${r.repo} (${r.mode}): ${r.files.map((f) => f.path).join(', ')}`) + '\n',
        );
        for (const c of r.conflicts ?? [])
          process.stdout.write(printable(`conflict markers left in ${c.path} (yours before: ${c.before})`) + '\n');
        if (r.left_out?.length) process.stdout.write(printable(`left out: ${r.left_out.join('; ')}`) + '\n');
        if (r.undo_id) process.stdout.write(`undo: forge-runner runs undo-apply ${runId} --undo-id ${r.undo_id}\n`);
      }
      if (!r.applied) process.exitCode = EXIT_FAILED;
    });

  runs
    .command('undo-apply')
    .description("Write back exactly what the checkout held before the run's newest apply (or --undo-id)")
    .argument('<run_id>')
    .option('--undo-id <id>', 'the apply to undo (printed by runs apply)')
    .action(async (runId: string, flags: { undoId?: string }) => {
      const r = await (await service()).undoApply(runId, flags.undoId);
      process.stdout.write(
        printable(`restored ${r.restored.join(', ') || 'nothing'}${r.review === 'pending' ? '; the run waits for review again' : ''}`) +
          '\n',
      );
    });
}
