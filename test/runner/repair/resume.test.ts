import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { git } from '../../helpers/gitRepo.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fix --resume after the runner is killed (kill -9)', function () {
  this.timeout(180_000);

  it('keeps the attempts that finished, redoes the rest, and cleans what the dead runner left', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'forge-test-repo-'));
    cpSync(join(process.cwd(), 'samples', 'py-calc', 'repo'), repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'base');
    const script = join(repo, '..', `resume-${Date.now()}.json`);
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          [
            {
              tool_calls: [
                {
                  name: 'edit_file',
                  arguments: {
                    path: 'calc.py',
                    old_string: 'return sum(values) / (len(values) + 1)',
                    new_string: 'return sum(values) / len(values)',
                  },
                },
              ],
            },
            { tool_calls: [{ name: 'finish', arguments: { summary: 'fixed' } }] },
          ],
          [
            // Long enough to be killed in; the resumed run gives cells 10 s (pytest's ground truth fits in it on a loaded machine).
            { tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 30' } }] },
            { tool_calls: [{ name: 'finish', arguments: { summary: 'nothing' } }] },
          ],
        ],
      }),
    );
    const db = () => new Database(join(process.env.FORGE_STATE_DIR!, 'forge.db'), { readonly: true, fileMustExist: true });
    try {
      const first = spawn(
        process.execPath,
        [
          RUNNER,
          'fix',
          '--repo',
          repo,
          '--provider',
          'host',
          '--issue-text',
          'average is wrong',
          '--model',
          `replay:${script}`,
          '--attempts',
          '2',
          '--cell-timeout',
          '120',
        ],
        { stdio: 'ignore' },
      );
      let runId = '';
      for (let i = 0; i < 600 && !runId; i++) {
        await sleep(100);
        if (!existsSync(join(process.env.FORGE_STATE_DIR!, 'forge.db'))) continue;
        const d = db();
        const row = d
          .prepare(
            `SELECT r.id FROM runs r JOIN attempts a0 ON a0.run_id = r.id AND a0.idx = 0 JOIN attempts a1 ON a1.run_id = r.id AND a1.idx = 1
                               WHERE r.repo = ? AND a0.status = 'finished' AND a1.status = 'running'`,
          )
          .get(repo) as { id: string } | undefined;
        d.close();
        if (row) runId = row.id;
      }
      assert.ok(runId, 'the run never reached "attempt 0 finished, attempt 1 running"');
      await sleep(500);
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      const before = db();
      const a0Before = before.prepare('SELECT finished_at FROM attempts WHERE run_id = ? AND idx = 0').get(runId) as {
        finished_at: string;
      };
      const cellsA0Before = (
        before.prepare('SELECT count(*) n FROM cell_executions WHERE run_id = ? AND attempt_idx = 0').get(runId) as { n: number }
      ).n;
      const settingsBefore = before.prepare('SELECT settings_json FROM runs WHERE id = ?').get(runId) as { settings_json: string };
      before.close();
      assert.equal(JSON.parse(settingsBefore.settings_json).cell_timeout_s, 120, 'the run records the budgets it started with');
      assert.ok(existsSync(join(repo, '.git', 'forge-cells', `${runId}-a1`)), 'the killed runner should have left attempt 1 behind');

      // What the dead runner left is shown as it is: interrupted, not running.
      const shown = spawnSync(process.execPath, [RUNNER, 'runs', 'show', runId], { encoding: 'utf8' });
      assert.equal(shown.status, 0, shown.stderr);
      assert.match(shown.stdout, new RegExp(`^${runId}: interrupted$`, 'm'));
      assert.match(shown.stdout, /attempt 1 \(t=[\d.]+\): interrupted/);
      const resumed = spawnSync(process.execPath, [RUNNER, 'fix', '--resume', runId, '--json', '--cell-timeout', '10'], {
        encoding: 'utf8',
      });
      assert.equal(resumed.status, 0, resumed.stderr);
      const report = FixReportSchema.parse(JSON.parse(resumed.stdout));
      assert.equal(report.run_id, runId);
      assert.equal(report.status, 'fixed');
      assert.deepEqual(report.winner?.attempts, [`${runId}-a0`]);
      assert.match(resumed.stderr, /attempt 0: finished before the interruption, kept/);
      const after = db();
      const a0After = after.prepare('SELECT finished_at FROM attempts WHERE run_id = ? AND idx = 0').get(runId) as { finished_at: string };
      const cellsA0After = (
        after.prepare('SELECT count(*) n FROM cell_executions WHERE run_id = ? AND attempt_idx = 0').get(runId) as { n: number }
      ).n;
      const settingsAfter = after.prepare('SELECT settings_json FROM runs WHERE id = ?').get(runId) as { settings_json: string };
      after.close();
      assert.equal(JSON.parse(settingsAfter.settings_json).cell_timeout_s, 10, 'a budget given to the resume is what the run goes on with');
      assert.equal(a0After.finished_at, a0Before.finished_at, 'attempt 0 was redone');
      assert.equal(cellsA0After, cellsA0Before, 'attempt 0 ran new cells');
      assert.equal(git(repo, 'branch', '--list', 'forge/*').trim(), `forge/attempt/${runId}-a0`);
      assert.equal(git(repo, 'status', '--porcelain'), '');
      const again = spawnSync(process.execPath, [RUNNER, 'fix', '--resume', runId], { encoding: 'utf8' });
      assert.equal(again.status, 2);
      assert.match(again.stderr, /already ended/);
    } finally {
      rmSync(script, { force: true });
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
