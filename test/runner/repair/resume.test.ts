import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type FixReport, FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { git } from '../../helpers/gitRepo.js';
import { waitFor } from '../../helpers/waitFor.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

// Attempt 0 fixes the bug at once; attempt 1 sleeps in a cell, long enough to be killed in.
const SCRIPT = {
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
      { tool_calls: [{ name: 'run_command', arguments: { command: 'sleep 30' } }] },
      { tool_calls: [{ name: 'finish', arguments: { summary: 'nothing' } }] },
    ],
  ],
};

/** Resolves when the runner's progress (stderr) has said every one of `lines`, in any order. */
function progressSaid(child: ChildProcess, lines: RegExp[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const left = new Set(lines);
    const rl = createInterface({ input: child.stderr! });
    rl.on('line', (line) => {
      for (const l of left) if (l.test(line)) left.delete(l);
      if (left.size === 0) {
        rl.close();
        // Still drained: a runner blocked on a full pipe is not what the test kills.
        child.stderr!.resume();
        resolve();
      }
    });
    child.once('exit', (code) => left.size > 0 && reject(new Error(`the runner exited (${code}) before saying ${[...left].join(', ')}`)));
  });
}

/**
 * fix --resume after the runner is killed (kill -9): each behaviour its own case, the store
 * read through RunStore. The first runner is killed once attempt 0 has finished and attempt 1
 * is at work (its progress said both, its worktree exists); then the run is resumed once.
 */
describe('fix --resume after the runner is killed (kill -9)', function () {
  this.timeout(180_000);
  let repo: string;
  let script: string;
  let runId: string;
  let store: RunStore;
  let killed: { a0FinishedAt: string | null; a0Cells: number; settings: Record<string, unknown> };

  before(async () => {
    repo = mkdtempSync(join(tmpdir(), 'forge-test-repo-'));
    cpSync(join(process.cwd(), 'samples', 'py-calc', 'repo'), repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'base');
    script = join(repo, '..', `resume-${Date.now()}.json`);
    writeFileSync(script, JSON.stringify(SCRIPT));
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
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    await progressSaid(first, [/attempt 0: green after/, /attempt 1: started/]);
    store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
    runId = store.listRuns().find((r) => r.repo === repo)!.id;
    // Attempt 1 at work: its worktree is there (state, not time).
    await waitFor(() => existsSync(join(repo, '.git', 'forge-cells', `${runId}-a1`)), 60_000, "attempt 1's worktree");
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    killed = {
      a0FinishedAt: store.attempts(runId)[0]!.finished_at,
      a0Cells: store.cells(runId, 0).length,
      settings: JSON.parse(store.getRun(runId)!.settings_json!) as Record<string, unknown>,
    };
  });

  after(() => {
    rmSync(script, { force: true });
    rmSync(repo, { recursive: true, force: true });
  });

  it('the run records the budgets it started with', () => {
    assert.equal(killed.settings.cell_timeout_s, 120);
  });

  it('what the dead runner left is shown as it is: the run and the attempt it ran interrupted, not running', () => {
    const shown = spawnSync(process.execPath, [RUNNER, 'runs', 'show', runId], { encoding: 'utf8' });
    assert.equal(shown.status, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^${runId}: interrupted$`, 'm'));
    assert.match(shown.stdout, /attempt 1 \(t=[\d.]+\): interrupted/);
    assert.ok(existsSync(join(repo, '.git', 'forge-cells', `${runId}-a1`)), 'attempt 1 is left for the resume to clean');
  });

  describe('then fix --resume with a budget of its own', () => {
    let resumed: { status: number | null; stderr: string; report: FixReport };

    before(() => {
      const r = spawnSync(process.execPath, [RUNNER, 'fix', '--resume', runId, '--json', '--cell-timeout', '10'], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      resumed = { status: r.status, stderr: r.stderr, report: FixReportSchema.parse(JSON.parse(r.stdout)) };
    });

    it('fixes the same run, the attempt that finished before the kill the winner', () => {
      assert.equal(resumed.report.run_id, runId);
      assert.equal(resumed.report.status, 'fixed');
      assert.deepEqual(resumed.report.winner?.attempts, [`${runId}-a0`]);
    });

    it('keeps the finished attempt as it was: no new cells, the same finish', () => {
      assert.match(resumed.stderr, /attempt 0: finished before the interruption, kept/);
      assert.equal(store.attempts(runId)[0]!.finished_at, killed.a0FinishedAt);
      assert.equal(store.cells(runId, 0).length, killed.a0Cells);
    });

    it('goes on with the budget given to the resume', () => {
      assert.equal((JSON.parse(store.getRun(runId)!.settings_json!) as { cell_timeout_s: number }).cell_timeout_s, 10);
    });

    it("cleans what the dead runner left: only the winner's branch remains, the checkout clean", () => {
      assert.equal(git(repo, 'branch', '--list', 'forge/*').trim(), `forge/attempt/${runId}-a0`);
      assert.equal(git(repo, 'status', '--porcelain'), '');
      assert.ok(!existsSync(join(repo, '.git', 'forge-cells', `${runId}-a1`)));
    });

    it('a run that ended is not resumed again', () => {
      const again = spawnSync(process.execPath, [RUNNER, 'fix', '--resume', runId], { encoding: 'utf8' });
      assert.equal(again.status, 2);
      assert.match(again.stderr, /already ended/);
    });
  });
});
