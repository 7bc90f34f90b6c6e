import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerCellProvider } from '../../../runner/src/cells/providers/dockerCellProvider.js';
import { applyPatch } from '../../../runner/src/workspace/applyPatch.js';
import { commitAttempt, createAttemptWorktree, destroyAttemptWorktree } from '../../../runner/src/workspace/attemptWorktree.js';
import { captureApplicablePatch } from '../../../runner/src/workspace/captureWorktreeDiff.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';

describe('two attempts in parallel in docker cells', function () {
  this.timeout(180_000);

  it('the loser leaves no worktree or branch; the winner lands on its branch and on a clean checkout', async function () {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    requireFeature(this, why === null, why ?? '');
    const provider = new DockerCellProvider();
    const repo = makeRepo({
      'greet.sh': 'echo helo\n',
      'test.sh': '[ "$(sh greet.sh)" = hello ] && echo PASS || { echo FAIL; exit 1; }\n',
    });
    const userHead = git(repo.dir, 'rev-parse', 'HEAD');
    try {
      const [winner, loser] = await Promise.all([
        createAttemptWorktree(repo.dir, 'HEAD', 'w1'),
        createAttemptWorktree(repo.dir, 'HEAD', 'l1'),
      ]);
      // Each attempt edits in its own cell, in parallel, then runs the tests in a fresh cell.
      const edits = await Promise.all([
        provider.run({ image: TEST_IMAGES.busybox, worktree: winner.path, cmd: "sed -i 's/helo/hello/' greet.sh" }),
        provider.run({ image: TEST_IMAGES.busybox, worktree: loser.path, cmd: "sed -i 's/helo/hallo/' greet.sh" }),
      ]);
      assert.deepEqual(
        edits.map((e) => e.exit_code),
        [0, 0],
      );
      const [w, l] = await Promise.all([
        provider.run({ image: TEST_IMAGES.busybox, worktree: winner.path, cmd: 'sh test.sh' }),
        provider.run({ image: TEST_IMAGES.busybox, worktree: loser.path, cmd: 'sh test.sh' }),
      ]);
      assert.deepEqual([w.exit_code, w.output], [0, 'PASS\n']);
      assert.equal(l.exit_code, 1);

      await destroyAttemptWorktree(loser);
      assert.equal(existsSync(loser.path), false);
      assert.doesNotMatch(git(repo.dir, 'branch', '--list'), /forge\/attempt\/l1/);

      const { patch } = await captureApplicablePatch({ location: winner.location, base: winner.baseCommit });
      const commit = await commitAttempt(winner, 'forge: attempt w1');
      assert.equal(git(repo.dir, 'rev-parse', 'forge/attempt/w1').trim(), commit);
      assert.equal(git(repo.dir, 'show', 'forge/attempt/w1:greet.sh'), 'echo hello\n');

      const clean = await createAttemptWorktree(repo.dir, winner.baseCommit, 'clean');
      const applied = await applyPatch(clean, patch);
      assert.equal(applied.applied, true);
      const truth = await provider.run({ image: TEST_IMAGES.busybox, worktree: clean.path, cmd: 'sh test.sh' });
      assert.equal(truth.output, 'PASS\n');

      await destroyAttemptWorktree(clean);
      await destroyAttemptWorktree(winner, { keepBranch: true });
      assert.equal(git(repo.dir, 'rev-parse', 'HEAD'), userHead);
      assert.equal(readFileSync(join(repo.dir, 'greet.sh'), 'utf8'), 'echo helo\n', "the user's tree changed");
      assert.equal(git(repo.dir, 'status', '--porcelain'), '');
    } finally {
      await provider.drain();
      repo.cleanup();
    }
  });
});
