import type { Command } from 'commander';
import { join } from 'node:path';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { InputError } from '../protocol/inputError.js';
import { openStore } from '../store/openStore.js';
import { type RunRow, RunStore } from '../store/runStore.js';
import { runSnapshot, shownAttemptStatus } from '../server/runSnapshots.js';
import { isBudgetStop } from '../repair/usage/usageAccounting.js';
import { budgetWord, usageLine } from '../protocol/usageWords.js';
import { processAlive } from '../workspace/staleWorktrees.js';
import { printable } from './formatCellResult.js';
import { registerRunsApplyCommands } from './runsApplyCommand.js';
import { storedVerdict } from '../repair/verdicts/storedVerdict.js';

/** A run still marked running by a runner that is gone is interrupted (resumable), as the editor shows it. */
function shownRunStatus(r: RunRow): string {
  return r.status === 'running' && !processAlive(r.runner_pid) ? 'interrupted' : r.status;
}

export function registerRunsCommand(program: Command): void {
  const runs = program.command('runs').description('History of fix runs, from the runner store ($FORGE_STATE_DIR/forge.db)');
  const store = () => new RunStore(openStore(join(runnerStateDir(), 'forge.db')));
  registerRunsApplyCommands(runs);

  runs
    .command('list')
    .description('The latest runs, newest first')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON')
    .action((flags: { limit: string; json?: boolean }) => {
      const limit = Number(flags.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new InputError(`--limit ${flags.limit}: expected a positive whole number`);
      const rows = store().listRuns(limit);
      if (flags.json) {
        process.stdout.write(
          JSON.stringify(
            rows.map(({ report_json: _r, baseline_json: _b, ...row }) => ({ ...row, status: shownRunStatus(row as RunRow) })),
            null,
            2,
          ) + '\n',
        );
        return;
      }
      if (rows.length === 0) process.stdout.write('no runs yet\n');
      for (const r of rows) {
        process.stdout.write(
          printable(`${r.id}  ${shownRunStatus(r).padEnd(11)} ${r.created_at}  ${r.attempts} attempt(s) on ${r.provider}  ${r.repo}`) +
            '\n',
        );
      }
    });

  runs
    .command('show')
    .description('One run: its attempts, verdicts and report')
    .argument('<run_id>')
    .option('--json', 'print JSON')
    .action((runId: string, flags: { json?: boolean }) => {
      const s = store();
      const run = s.getRun(runId);
      if (!run) throw new InputError(`no run ${runId}; see forge-runner runs list`);
      const status = shownRunStatus(run);
      const state = status === 'running' ? 'going' : status === 'interrupted' ? 'interrupted' : 'ended';
      // Time and tokens as the editor shows them (the run's snapshot), budget stops as their own state.
      const snap = runSnapshot(s, runId, [], processAlive);
      const usageOf = (idx: number) => snap?.attempts.find((x) => x.index === idx)?.usage;
      const attempts = s.attempts(runId).map((a) => {
        const shown = shownAttemptStatus(a.status, state);
        return { ...a, status: shown === 'finished' && isBudgetStop(a.stop) ? 'budget' : shown, usage: usageOf(a.idx) ?? null };
      });
      if (flags.json) {
        const parse = (t: string | null) => (t ? JSON.parse(t) : null);
        process.stdout.write(
          JSON.stringify(
            {
              ...run,
              status,
              baseline_json: undefined,
              report_json: undefined,
              baseline: parse(run.baseline_json),
              report: parse(run.report_json),
              attempts: attempts.map(({ verdict_json, patch, ...a }) => ({
                ...a,
                verdict: verdict_json ? storedVerdict(verdict_json) : null,
                patch_bytes: patch?.length ?? 0,
              })),
              cells: s.cellCount(runId),
              usage: snap?.usage ?? null,
            },
            null,
            2,
          ) + '\n',
        );
        return;
      }
      process.stdout.write(
        printable(
          `${run.id}: ${status}\n  repo ${run.repo} at ${run.base_commit.slice(0, 12)}\n  tests: ${run.test_cmd}\n  ${run.provider}${run.image ? ` (${run.image})` : ''}, model ${run.model}`,
        ) + '\n',
      );
      for (const a of attempts) {
        const v = a.verdict_json ? (JSON.parse(a.verdict_json) as { green: boolean; passed: number; failed: number }) : null;
        const result = a.error
          ? `error: ${a.error}`
          : v
            ? `${a.status === 'budget' ? `${budgetWord(a.stop)}, tests ` : ''}${v.green ? 'green' : 'red'}, ${v.passed} passed, ${v.failed} failed`
            : a.status;
        process.stdout.write(
          printable(
            `  attempt ${a.idx} (t=${a.temperature}): ${result}, ${a.usage ? usageLine(a.usage) : `${a.turns} turn(s)`}${run.winner_attempt === a.idx ? '  <- winner' : ''}`,
          ) + '\n',
        );
      }
      process.stdout.write(`  ${s.cellCount(runId)} cells${snap?.usage ? `; run: ${usageLine(snap.usage)}` : ''}\n`);
    });
}
