import assert from 'node:assert/strict';
import Docker from 'dockerode';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { LABEL_CELL, LABEL_RUN, LABEL_RUNNER_HOST, LABEL_RUNNER_PID } from '../../../runner/src/cells/dockerContainerSpec.js';
import { createAttemptWorktree, keepAttemptWorktree } from '../../../runner/src/workspace/attemptWorktree.js';
import { judgeWorktree, parseWorktreeList } from '../../../runner/src/workspace/staleWorktrees.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

/** The pid of a process that has certainly exited. */
function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$']);
  return Number(String(r.stdout).trim());
}

describe('forge-runner gc', function () {
  this.timeout(120_000);

  it('removes what a crashed runner left, and leaves kept, live and foreign work alone', async function () {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    requireFeature(this, why === null, why ?? '');
    const docker = new Docker({ socketPath: '/var/run/docker.sock' });
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const dead = deadPid();
    const labels = (pid: number, cell: string) => ({
      [LABEL_CELL]: cell,
      [LABEL_RUN]: 'gc-test',
      [LABEL_RUNNER_PID]: String(pid),
      [LABEL_RUNNER_HOST]: hostname(),
    });
    const orphan = await docker.createContainer({ Image: TEST_IMAGES.busybox, Cmd: ['true'], Labels: labels(dead, 'gc-orphan') });
    const live = await docker.createContainer({ Image: TEST_IMAGES.busybox, Cmd: ['true'], Labels: labels(process.pid, 'gc-live') });
    try {
      const crashed = await createAttemptWorktree(repo.dir, 'HEAD', 'crashed');
      git(repo.dir, 'worktree', 'unlock', crashed.path);
      git(repo.dir, 'worktree', 'lock', '--reason', `forge-runner pid=${dead} host=${hostname()}`, crashed.path);
      const vanished = await createAttemptWorktree(repo.dir, 'HEAD', 'vanished');
      git(repo.dir, 'worktree', 'unlock', vanished.path);
      rmSync(vanished.path, { recursive: true, force: true });
      const running = await createAttemptWorktree(repo.dir, 'HEAD', 'running');
      const kept = await createAttemptWorktree(repo.dir, 'HEAD', 'kept');
      await keepAttemptWorktree(kept);
      // A run's build caches (issue 29): a dead runner's go, a live one's stay.
      const forgeCells = join(repo.dir, '.git', 'forge-cells');
      const deadCache = join(forgeCells, `${dead}@${hostname()}-run-dead-build-cache`);
      const liveCache = join(forgeCells, `${process.pid}@${hostname()}-run-live-build-cache`);
      // Another host's runner (a shared disk, a container) may be alive: its cache stays.
      const foreignCache = join(forgeCells, `${dead}@elsewhere.example-run-far-build-cache`);
      for (const d of [deadCache, liveCache, foreignCache]) mkdirSync(join(d, 'go-build', '00'), { recursive: true });

      const dry = JSON.parse(
        execFileSync(process.execPath, [RUNNER, 'gc', '--repo', repo.dir, '--dry-run', '--json'], { encoding: 'utf8' }),
      );
      const act = (items: { id: string; action: string }[], id: string) => items.find((i) => i.id === id || i.id.endsWith(id))?.action;
      assert.equal(act(dry.items, crashed.path), 'would remove');
      assert.equal(act(dry.items, vanished.path), 'would remove');
      assert.equal(act(dry.items, 'gc-orphan'), 'would remove');
      assert.equal(act(dry.items, deadCache), 'would remove');
      assert.ok(existsSync(deadCache), '--dry-run removed a cache');
      assert.ok(existsSync(crashed.path), '--dry-run removed something');
      assert.ok((await orphan.inspect()).Id);

      const real = JSON.parse(execFileSync(process.execPath, [RUNNER, 'gc', '--repo', repo.dir, '--json'], { encoding: 'utf8' }));
      assert.equal(act(real.items, crashed.path), 'removed');
      assert.equal(act(real.items, running.path), 'left');
      assert.equal(act(real.items, kept.path), 'left');
      assert.equal(act(real.items, 'gc-orphan'), 'removed');
      assert.equal(act(real.items, 'gc-live'), 'left');
      assert.equal(existsSync(crashed.path), false);
      assert.equal(act(real.items, deadCache), 'removed');
      assert.equal(existsSync(deadCache), false);
      assert.ok(existsSync(liveCache), "a live runner's cache stays");
      assert.ok(existsSync(foreignCache), "another host's runner's cache stays");
      assert.ok(existsSync(running.path) && existsSync(kept.path));
      const branches = git(repo.dir, 'branch', '--list', 'forge/*');
      assert.doesNotMatch(branches, /crashed|vanished/);
      assert.match(branches, /running/);
      await assert.rejects(orphan.inspect(), /404|no such container/i);
      assert.equal(git(repo.dir, 'status', '--porcelain'), '');
    } finally {
      await live.remove({ force: true }).catch(() => undefined);
      await orphan.remove({ force: true }).catch(() => undefined);
      repo.cleanup();
    }
  });
});

describe('gc decisions', () => {
  it('parses git worktree list --porcelain', () => {
    const text =
      'worktree /r\nHEAD abc\nbranch refs/heads/main\n\nworktree /r/.forge/cells/a\nHEAD abc\nbranch refs/heads/forge/attempt/a\nlocked forge-runner pid=12 host=h\n\nworktree /r/.forge/cells/b\nHEAD abc\ndetached\nprunable gitdir file points to non-existent location\n';
    assert.deepEqual(parseWorktreeList(text), [
      { path: '/r', branch: 'main', locked: null, prunable: false },
      { path: '/r/.forge/cells/a', branch: 'forge/attempt/a', locked: 'forge-runner pid=12 host=h', prunable: false },
      { path: '/r/.forge/cells/b', branch: null, locked: null, prunable: true },
    ]);
  });

  it('removes only what a dead runner on this host owned', () => {
    const e = (locked: string | null, prunable = false) => ({ path: '/r/.forge/cells/x', branch: 'forge/attempt/x', locked, prunable });
    const alive = (pid: number) => pid === 1;
    assert.equal(judgeWorktree(e('forge-runner pid=1 host=h'), 'h', alive).action, 'leave');
    assert.equal(judgeWorktree(e('forge-runner pid=2 host=h'), 'h', alive).action, 'remove');
    assert.equal(judgeWorktree(e('forge-runner pid=2 host=other'), 'h', alive).action, 'leave');
    assert.equal(judgeWorktree(e('forge-runner keep'), 'h', alive).action, 'leave');
    assert.equal(judgeWorktree(e(null), 'h', alive).action, 'remove');
    assert.equal(judgeWorktree(e('forge-runner keep', true), 'h', alive).action, 'remove');
  });
});
