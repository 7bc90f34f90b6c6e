import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runnerStateDir } from '../../../runner/src/cells/cellIdentity.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { createAttemptWorktree, keepAttemptWorktree } from '../../../runner/src/workspace/attemptWorktree.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const DAY_MS = 86_400_000;

/** A process that has certainly exited: a "running" run of it was interrupted. */
function deadPid(): number {
  return Number(String(spawnSync('sh', ['-c', 'echo $$']).stdout).trim());
}

const gc = (...args: string[]) => spawnSync(process.execPath, [RUNNER, 'gc', ...args], { encoding: 'utf8' });
const branches = (dir: string) => git(dir, 'branch', '--list', 'forge/*', '--format=%(refname:short)').split('\n').filter(Boolean).sort();

describe('forge-runner gc --older-than (branch hygiene)', function () {
  this.timeout(120_000);

  it('lists old unreviewed runs of every repository the store knows, removes exactly those on --yes', async () => {
    const a = makeRepo({ 'a.txt': 'a\n' });
    const b = makeRepo({ 'b.txt': 'b\n' });
    // The same store the spawned runner opens ($FORGE_STATE_DIR of the test run).
    const db = openStore(join(runnerStateDir(), 'forge.db'));
    const store = new RunStore(db);
    const head = (dir: string) => git(dir, 'rev-parse', 'HEAD').trim();
    const seed = (
      id: string,
      dir: string,
      ageDays: number,
      how: { review?: 'pending' | 'applied'; status?: 'not_fixed' | 'running'; pid?: number },
    ) => {
      store.createRun(
        {
          id,
          repo: dir,
          base_commit: head(dir),
          issue: `# ${id} issue\nbody`,
          test_cmd: 'true',
          provider: 'host',
          image: '',
          model: 'replay:x',
          attempts: 2,
          runner_pid: how.pid ?? deadPid(),
          install_cmd: null,
        },
        [0, 0.7],
      );
      if (how.status !== 'running') store.finishRun(id, how.status ?? 'fixed', how.status ? null : 0, {});
      if (how.review) store.setReview(id, how.review);
      const t = new Date(Date.now() - ageDays * DAY_MS).toISOString();
      db.prepare('UPDATE runs SET created_at = ?, updated_at = ? WHERE id = ?').run(t, t, id);
      git(dir, 'branch', `forge/attempt/${id}-a0`);
    };
    try {
      seed('run-old-aaaaaa', a.dir, 5, { review: 'pending' });
      // An old run that did not fix, with an attempt worktree kept for review.
      seed('run-nfx-bbbbbb', b.dir, 4, { status: 'not_fixed' });
      const kept = await createAttemptWorktree(b.dir, 'HEAD', 'run-nfx-bbbbbb-a1');
      await keepAttemptWorktree(kept);
      seed('run-app-cccccc', a.dir, 9, { review: 'applied' });
      seed('run-new-dddddd', a.dir, 1, { review: 'pending' });
      seed('run-liv-eeeeee', b.dir, 8, { status: 'running', pid: process.pid });
      // Orphans: a branch of a run the store forgot, its tip a week old; a fresh one stays.
      const oldTip = execFileSync('git', ['-c', 'safe.directory=*', 'commit-tree', 'HEAD^{tree}', '-m', 'old attempt'], {
        cwd: a.dir,
        encoding: 'utf8',
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: 't',
          GIT_AUTHOR_EMAIL: 't@t',
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@t',
          GIT_COMMITTER_DATE: new Date(Date.now() - 7 * DAY_MS).toISOString(),
        },
      }).trim();
      // Made 7 days ago (its reflog's entry carries the committer date): an old orphan.
      execFileSync('git', ['-c', 'safe.directory=*', 'branch', 'forge/attempt/run-gon-ffffff-a0', oldTip], {
        cwd: a.dir,
        env: {
          ...process.env,
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@t',
          GIT_COMMITTER_DATE: new Date(Date.now() - 7 * DAY_MS).toISOString(),
        },
      });
      git(a.dir, 'branch', 'forge/attempt/run-gon-999999-a0');
      // Made just now at the old commit: new, whatever its tip's date says.
      git(a.dir, 'branch', 'forge/attempt/run-gon-888888-a0', oldTip);
      const beforeA = branches(a.dir);
      const beforeB = branches(b.dir);

      // Bad duration: one line, exit 2, nothing touched.
      for (const bad of ['3', 'soon', '-2d', '0h']) {
        const r = gc('--older-than', bad);
        assert.equal(r.status, 2, r.stderr);
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
        assert.match(r.stderr, /--older-than .*expected a positive duration/);
      }
      assert.equal(gc('--older-than', '3d', '--yes', '--dry-run').status, 2);
      assert.equal(gc('--yes').status, 2);
      assert.deepEqual(branches(a.dir), beforeA);

      // Without --yes: listed, nothing removed.
      const dry = gc('--older-than', '3d');
      assert.equal(dry.status, 0, dry.stderr);
      assert.match(dry.stdout, /would remove +run run-old-aaaaaa \(fixed, not reviewed for 5d\)/);
      assert.match(dry.stdout, /would remove +run run-nfx-bbbbbb/);
      assert.match(dry.stdout, new RegExp(`worktree ${kept.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.match(dry.stdout, /would remove +branch forge\/attempt\/run-gon-ffffff-a0 .*no run in the store owns it/);
      assert.doesNotMatch(dry.stdout, /run-app-cccccc|run-new-dddddd|run-liv-eeeeee|run-gon-999999|run-gon-888888/);
      assert.match(dry.stdout, /2 run\(s\) .* and 1 orphan branch\(es\) to remove; nothing was removed: pass --yes/);
      assert.deepEqual(branches(a.dir), beforeA);
      assert.deepEqual(branches(b.dir), beforeB);
      assert.ok(existsSync(kept.path));

      const json = JSON.parse(gc('--older-than', '3d', '--json').stdout) as {
        dry_run: boolean;
        runs: { run_id: string; branches: string[] }[];
      };
      assert.equal(json.dry_run, true);
      assert.deepEqual(
        json.runs.map((r) => r.run_id),
        ['run-old-aaaaaa', 'run-nfx-bbbbbb'],
      );

      // --repo narrows it to one repository.
      const onlyA = gc('--older-than', '3d', '--repo', a.dir);
      assert.doesNotMatch(onlyA.stdout, /run-nfx-bbbbbb/);

      const real = gc('--older-than', '3d', '--yes');
      assert.equal(real.status, 0, real.stderr);
      assert.match(real.stdout, /removed +run run-old-aaaaaa/);
      assert.match(real.stdout, /2 run\(s\) .* and 1 orphan branch\(es\) removed/);
      assert.deepEqual(branches(a.dir), [
        'forge/attempt/run-app-cccccc-a0',
        'forge/attempt/run-gon-888888-a0',
        'forge/attempt/run-gon-999999-a0',
        'forge/attempt/run-new-dddddd-a0',
      ]);
      assert.deepEqual(branches(b.dir), ['forge/attempt/run-liv-eeeeee-a0']);
      assert.equal(existsSync(kept.path), false, 'the kept worktree of the old run is gone');
      assert.equal(store.getRun('run-old-aaaaaa')?.review, 'discarded');
      assert.equal(store.getRun('run-nfx-bbbbbb')?.review, 'discarded');
      assert.equal(store.getRun('run-new-dddddd')?.review, 'pending');
      assert.equal(store.getRun('run-liv-eeeeee')?.status, 'running');
      assert.equal(git(a.dir, 'status', '--porcelain'), '');

      // Nothing more to do: a second pass lists nothing.
      assert.match(gc('--older-than', '3d').stdout, /^0 run\(s\) .* and 0 orphan branch\(es\) to remove\n$/);
    } finally {
      db.close();
      a.cleanup();
      b.cleanup();
    }
  });
});
