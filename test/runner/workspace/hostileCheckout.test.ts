import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chownTree } from '../../../runner/src/hostguard/cellUser.js';
import { checkRepository } from '../../../runner/src/repair/fix/checkRepository.js';
import { copiedFromOutside } from '../../../runner/src/workspace/applyPatch.js';
import { attemptTree } from '../../../runner/src/workspace/attemptTree.js';
import { locateRepository } from '../../../runner/src/workspace/attemptWorktree.js';
import { applyToWorkspace } from '../../../runner/src/workspace/reviewWinner.js';
import { stashTrackedChanges } from '../../../runner/src/workspace/stashChanges.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';

/** No confirmation of any repository file (the pre-flight only reads them here). */
const noConsents = { isRepositoryFileConfirmed: () => false };

/**
 * What an applied attempt can leave in the user's checkout, against the runner's own git
 * calls there (pre-flight status, stash, review of an attempt): each isolation claim with a
 * test that tries to break it.
 */
describe('hostile checkout vs the runner git on the user repository (pre-flight, stash, attempt review)', () => {
  const canary = join(tmpdir(), `forge-canary-${process.pid}`);
  afterEach(() => rmSync(canary, { force: true }));

  it('a directory an attempt filled with HEAD, config and objects is not a repository: its config never runs', async () => {
    const r = makeRepo({ 'a.txt': 'one\n' });
    try {
      const conf = join(r.dir, 'conf');
      for (const d of ['objects', 'refs/heads']) mkdirSync(join(conf, d), { recursive: true });
      writeFileSync(join(conf, 'HEAD'), 'ref: refs/heads/main\n');
      writeFileSync(
        join(conf, 'config'),
        `[core]\n\tbare = false\n\tworktree = .\n[filter "pwn"]\n\tclean = sh -c 'touch ${canary}; cat'\n[core]\n\tfsmonitor = sh -c 'touch ${canary}'\n`,
      );
      writeFileSync(join(conf, '.gitattributes'), '* filter=pwn\n');
      // An index tracking one of its files, which is then stat-dirty: status would filter it.
      const scratch = join(tmpdir(), `forge-planted-${process.pid}`);
      execFileSync('git', ['init', '-q', '--bare', scratch]);
      execFileSync('git', [`--git-dir=${scratch}`, `--work-tree=${conf}`, 'add', 'HEAD'], {
        env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
      });
      copyFileSync(join(scratch, 'index'), join(conf, 'index'));
      rmSync(scratch, { recursive: true, force: true });
      utimesSync(join(conf, 'HEAD'), new Date(), new Date(Date.now() + 5000));
      const check = await checkRepository(conf, undefined, noConsents);
      assert.equal(check.repo, null, JSON.stringify(check));
      assert.deepEqual(
        check.problems.map((p) => p.code),
        ['not_a_repository'],
      );
      await assert.rejects(stashTrackedChanges(conf), /git|repository|bare/i);
      assert.equal(existsSync(canary), false, 'no program from the planted config ran');
    } finally {
      r.cleanup();
    }
  });

  it("a .gitattributes naming the user's own filter does not make status run it; stash refuses a repository with filters", async () => {
    const r = makeRepo({ 'a.txt': 'one\n', '.gitattributes': '* filter=evil\n' });
    try {
      git(r.dir, 'config', 'filter.evil.clean', `sh -c 'touch ${canary}; cat'`);
      git(r.dir, 'config', 'filter.evil.smudge', `sh -c 'touch ${canary}; cat'`);
      // Stat-dirty: git would re-read (and filter) the file to compare it.
      utimesSync(join(r.dir, 'a.txt'), new Date(), new Date(Date.now() + 5000));
      const check = await checkRepository(r.dir, undefined, noConsents);
      assert.equal(check.repo, r.dir);
      assert.equal(existsSync(canary), false, 'status ran no filter');
      writeFileSync(join(r.dir, 'a.txt'), 'two\n');
      await assert.rejects(stashTrackedChanges(r.dir), /configures git filters \(evil\).*stash or commit the changes yourself/);
      assert.equal(existsSync(canary), false, 'stash ran no filter');
    } finally {
      r.cleanup();
    }
  });

  it('a stored patch that copies a host file into the repository is refused by review and apply', async () => {
    const secret = join(tmpdir(), `forge-secret-${process.pid}`);
    writeFileSync(secret, 'host secret\n');
    const r = makeRepo({ 'a.txt': 'one\n' });
    try {
      const patch = Buffer.from(
        `diff --git a/a.txt b/stolen.txt\nsimilarity index 100%\ncopy from ${secret}\ncopy to stolen.txt\n` +
          `diff --git a/x b/y\nrename from ../../etc/passwd\nrename to y\n`,
      );
      assert.equal(copiedFromOutside(patch), secret);
      assert.equal(copiedFromOutside('rename from "a/../../b"\n'), 'a/../../b');
      assert.equal(copiedFromOutside('copy from src/a.txt\nrename from b..c/d\n'), null);
      const base = git(r.dir, 'rev-parse', 'HEAD').trim();
      await assert.rejects(attemptTree(r.dir, base, patch), /outside the repository/);
      await assert.rejects(applyToWorkspace(r.dir, patch), /outside the repository/);
      assert.equal(existsSync(join(r.dir, 'stolen.txt')), false);
    } finally {
      rmSync(secret, { force: true });
      r.cleanup();
    }
  });

  it('a root runner gives what review and stash write into a user-owned repository back to its owner', async function () {
    requireFeature(this, (process.getuid?.() ?? 0) === 0, 'ownership is only changed by a root runner');
    const r = makeRepo({ 'a.txt': 'one\n' });
    const owner = { uid: 1234, gid: 1234 };
    try {
      chownTree(r.dir, owner);
      const loc = await locateRepository(r.dir);
      const base = git(r.dir, 'rev-parse', 'HEAD').trim();
      const patch = Buffer.from('diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+attempt says two\n');
      const tree = await attemptTree(r.dir, base, patch);
      assert.match(tree, /^[0-9a-f]{40}$/);
      const rootOwned = (dir: string): string[] =>
        readdirSync(dir, { recursive: true, withFileTypes: true })
          .map((e) => join(e.parentPath, e.name))
          .filter((p) => lstatSync(p).uid !== owner.uid);
      assert.deepEqual(rootOwned(loc.objectsDir), [], 'new object directories belong to the owner');
      writeFileSync(join(r.dir, 'a.txt'), 'work in progress\n');
      lchownSync(join(r.dir, 'a.txt'), owner.uid, owner.gid);
      const stashed = await stashTrackedChanges(r.dir);
      assert.equal(stashed.stashed, true, stashed.message);
      assert.deepEqual(
        rootOwned(r.dir).filter((p) => !p.includes('/.git/hooks')),
        [],
        'nothing in the checkout or .git is left root-owned',
      );
    } finally {
      r.cleanup();
    }
  });
});
