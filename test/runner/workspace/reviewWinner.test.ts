import assert from 'node:assert/strict';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyToWorkspace, discardRun, listReviewFiles, readReviewContent } from '../../../runner/src/workspace/reviewWinner.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';

describe('review of a winner: files, content, all-or-nothing apply, discard', () => {
  const base = { 'a.txt': 'one\ntwo\nthree\n', 'b.txt': 'alpha\nbeta\n', 'gone.txt': 'bye\n' };

  /** A repo plus a winner branch changing a.txt and b.txt, deleting gone.txt, adding new.bin and a symlink. */
  function withWinner() {
    const r = makeRepo(base);
    const baseCommit = git(r.dir, 'rev-parse', 'HEAD').trim();
    git(r.dir, 'checkout', '-q', '-b', 'forge/attempt/run-x-a0');
    writeFileSync(join(r.dir, 'a.txt'), 'one\nTWO\nthree\n');
    writeFileSync(join(r.dir, 'b.txt'), 'alpha\nBETA\n');
    writeFileSync(join(r.dir, 'new.bin'), Buffer.from([0, 1, 2, 0, 255]));
    symlinkSync('/etc/passwd', join(r.dir, 'link'));
    git(r.dir, 'rm', '-q', 'gone.txt');
    git(r.dir, 'add', '-A');
    git(r.dir, 'commit', '-q', '-m', 'winner');
    const patch = git(r.dir, 'diff', '--binary', baseCommit, 'HEAD');
    git(r.dir, 'checkout', '-q', 'main');
    return { ...r, baseCommit, branch: 'forge/attempt/run-x-a0', patch };
  }

  it('lists changed files and reads both sides from git objects; binary and symlinks are named, not followed', async () => {
    const w = withWinner();
    try {
      const files = await listReviewFiles(w.dir, w.baseCommit, w.branch);
      assert.deepEqual(files.map((f) => `${f.status} ${f.path}`).sort(), [
        'added link',
        'added new.bin',
        'deleted gone.txt',
        'modified a.txt',
        'modified b.txt',
      ]);
      assert.equal((await readReviewContent(w.dir, w.baseCommit, 'a.txt')).content, base['a.txt']);
      assert.equal((await readReviewContent(w.dir, w.branch, 'a.txt')).content, 'one\nTWO\nthree\n');
      assert.deepEqual(await readReviewContent(w.dir, w.branch, 'gone.txt'), { content: null, note: 'not present on this side' });
      assert.match((await readReviewContent(w.dir, w.branch, 'new.bin')).note!, /binary/);
      const link = await readReviewContent(w.dir, w.branch, 'link');
      assert.equal(link.content, 'symbolic link -> /etc/passwd');
    } finally {
      w.cleanup();
    }
  });

  it('apply: a conflict in one file is reported per file and nothing is written', async () => {
    const w = withWinner();
    try {
      writeFileSync(join(w.dir, 'b.txt'), 'alpha\nbeta changed by the user\n');
      const r = await applyToWorkspace(w.dir, Buffer.from(w.patch));
      assert.equal(r.applied, false);
      const byPath = new Map(r.files.map((f) => [f.path, f]));
      assert.equal(byPath.get('b.txt')?.ok, false);
      assert.match(byPath.get('b.txt')!.reason!, /b\.txt/);
      assert.equal(byPath.get('a.txt')?.ok, true);
      assert.equal(readFileSync(join(w.dir, 'a.txt'), 'utf8'), base['a.txt'], 'a.txt untouched: nothing half applied');
      assert.equal(readFileSync(join(w.dir, 'gone.txt'), 'utf8'), 'bye\n');
    } finally {
      w.cleanup();
    }
  });

  it('apply on a clean tree writes every file; discard removes the branch', async () => {
    const w = withWinner();
    try {
      const r = await applyToWorkspace(w.dir, Buffer.from(w.patch));
      assert.equal(r.applied, true);
      assert.equal(readFileSync(join(w.dir, 'b.txt'), 'utf8'), 'alpha\nBETA\n');
      assert.deepEqual(await discardRun(w.dir, 'run-x', w.branch), [`branch ${w.branch}`]);
      assert.equal(git(w.dir, 'branch', '--list', 'forge/*').trim(), '');
      await assert.rejects(listReviewFiles(w.dir, w.baseCommit, w.branch), /is gone/);
    } finally {
      w.cleanup();
    }
  });
});
