import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { applyPatch } from '../../../runner/src/workspace/applyPatch.js';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../../runner/src/workspace/attemptWorktree.js';
import { captureApplicablePatch, captureWorktreeDiff } from '../../../runner/src/workspace/captureWorktreeDiff.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';
import { includePathspecs, parseForgeIncludeLines } from '../../../runner/src/repair/trust/repositoryFiles.js';

describe('attempt worktrees', function () {
  this.timeout(60_000);
  let repo: ReturnType<typeof makeRepo>;
  beforeEach(() => {
    repo = makeRepo({ 'a.txt': 'one\ntwo\nthree\n', '.gitignore': '.env\nbuild/\n', 'logo.bin': Buffer.from([0, 1, 2]) });
  });
  afterEach(() => repo.cleanup());

  /** Everything about the user's own checkout that Forge must never change. */
  const userState = () => ({
    head: git(repo.dir, 'rev-parse', 'HEAD'),
    branch: git(repo.dir, 'symbolic-ref', 'HEAD'),
    index: readFileSync(join(repo.dir, '.git', 'index')),
    status: git(repo.dir, 'status', '--porcelain', '--untracked-files=all'),
    stash: git(repo.dir, 'stash', 'list'),
    gitignore: readFileSync(join(repo.dir, '.gitignore'), 'utf8'),
  });

  it("creates a worktree on forge/attempt/<id> in the repository's git directory, without touching .gitignore", async () => {
    writeFileSync(join(repo.dir, 'a.txt'), 'user edit in progress\n');
    git(repo.dir, 'stash');
    writeFileSync(join(repo.dir, 'wip.txt'), 'untracked user file\n');
    const before = userState();
    const wt = await createAttemptWorktree(repo.dir, 'HEAD', 'a1');
    assert.equal(wt.path, join(repo.dir, '.git', 'forge-cells', 'a1'));
    assert.equal(wt.branch, 'forge/attempt/a1');
    // Nobody but the runner reaches into an attempt (a cell may leave a setuid file of the cell user in its own).
    assert.equal(statSync(join(repo.dir, '.git', 'forge-cells')).mode & 0o777, 0o700);
    assert.equal(git(wt.path, 'rev-parse', 'HEAD'), before.head);
    assert.equal(readFileSync(join(wt.path, 'a.txt'), 'utf8'), 'one\ntwo\nthree\n');
    assert.deepEqual(userState(), before, "the user's checkout changed");
    assert.equal(existsSync(join(wt.path, 'wip.txt')), false, 'untracked files copied without a .forgeinclude');
    await destroyAttemptWorktree(wt);
    assert.deepEqual(userState(), before);
  });

  it('copies the untracked files the run decided on, and only those; a .forgeinclude alone copies nothing', async () => {
    writeFileSync(join(repo.dir, '.env'), 'TOKEN=local\n');
    mkdirSync(join(repo.dir, 'build'));
    writeFileSync(join(repo.dir, 'build', 'cache.o'), 'x');
    writeFileSync(join(repo.dir, 'notes.txt'), 'not listed\n');
    writeFileSync(join(repo.dir, '.forgeinclude'), '# files the tests need\n.env\nnotes.txt\n\n');
    const plain = await createAttemptWorktree(repo.dir, 'HEAD', 'inc0');
    assert.deepEqual(plain.included, []);
    assert.equal(existsSync(join(plain.path, '.env')), false);
    await destroyAttemptWorktree(plain);
    const wt = await createAttemptWorktree(repo.dir, 'HEAD', 'inc', { include: ['.env'] });
    assert.deepEqual(wt.included, ['.env']);
    assert.equal(readFileSync(join(wt.path, '.env'), 'utf8'), 'TOKEN=local\n');
    assert.equal(existsSync(join(wt.path, 'build', 'cache.o')), false);
    assert.equal(existsSync(join(wt.path, 'notes.txt')), false);
    await destroyAttemptWorktree(wt);
  });

  it('destroy removes worktree and branch; keepBranch leaves the branch for review', async () => {
    const gone = await createAttemptWorktree(repo.dir, 'HEAD', 'lose');
    const kept = await createAttemptWorktree(repo.dir, 'HEAD', 'win');
    await destroyAttemptWorktree(gone);
    await destroyAttemptWorktree(kept, { keepBranch: true });
    assert.equal(existsSync(gone.path), false);
    assert.equal(existsSync(kept.path), false);
    const branches = git(repo.dir, 'branch', '--list', 'forge/*');
    assert.doesNotMatch(branches, /forge\/attempt\/lose/);
    assert.match(branches, /forge\/attempt\/win/);
    assert.doesNotMatch(git(repo.dir, 'worktree', 'list'), /forge-cells/);
  });

  it('two attempts created in parallel; the winning diff applies to a clean checkout', async () => {
    const [a, b] = await Promise.all([createAttemptWorktree(repo.dir, 'HEAD', 'p1'), createAttemptWorktree(repo.dir, 'HEAD', 'p2')]);
    writeFileSync(join(a.path, 'a.txt'), 'one\nTWO\nthree\n');
    writeFileSync(join(a.path, 'new.txt'), 'added\n');
    writeFileSync(join(a.path, 'logo.bin'), Buffer.from([9, 8, 7, 0]));
    writeFileSync(join(b.path, 'a.txt'), 'something else\n');
    const diff = await captureWorktreeDiff({ location: a.location, base: a.baseCommit });
    assert.deepEqual(diff.files.map((f) => f.path).sort(), ['a.txt', 'logo.bin', 'new.txt']);
    const { patch } = await captureApplicablePatch({ location: a.location, base: a.baseCommit });
    await destroyAttemptWorktree(b);
    // Ground truth: a fresh worktree on the base commit gets exactly the winner's content.
    const check = await createAttemptWorktree(repo.dir, a.baseCommit, 'check');
    const outcome = await applyPatch(check, patch);
    assert.deepEqual({ applied: outcome.applied, conflicts: outcome.conflicts }, { applied: true, conflicts: [] });
    for (const f of ['a.txt', 'new.txt', 'logo.bin']) assert.deepEqual(readFileSync(join(check.path, f)), readFileSync(join(a.path, f)), f);
    assert.equal(existsSync(b.path), false);
    assert.doesNotMatch(git(repo.dir, 'branch', '--list'), /p2/);
    await destroyAttemptWorktree(a);
    await destroyAttemptWorktree(check);
  });

  it('applies with a 3-way merge when the target moved on, and reports conflicts by file', async () => {
    const wt = await createAttemptWorktree(repo.dir, 'HEAD', 'm1');
    writeFileSync(join(wt.path, 'a.txt'), 'one\ntwo\nthree\nfour\n');
    const { patch } = await captureApplicablePatch({ location: wt.location, base: wt.baseCommit });
    // The target changed a different line: the 3-way merge resolves it.
    const moved = await createAttemptWorktree(repo.dir, 'HEAD', 'm2');
    writeFileSync(join(moved.path, 'a.txt'), 'ONE\ntwo\nthree\n');
    git(moved.path, 'commit', '-qam', 'moved on');
    const merged = await applyPatch(moved, patch);
    assert.equal(merged.applied, true);
    assert.equal(merged.mode, 'three-way');
    assert.equal(readFileSync(join(moved.path, 'a.txt'), 'utf8'), 'ONE\ntwo\nthree\nfour\n');
    // The target changed the same line: a conflict, named by file.
    const clash = await createAttemptWorktree(repo.dir, 'HEAD', 'm3');
    writeFileSync(join(clash.path, 'a.txt'), 'one\ntwo\nTHREE!\n');
    git(clash.path, 'commit', '-qam', 'clash');
    const conflicted = await applyPatch(clash, patch);
    assert.equal(conflicted.applied, false);
    assert.deepEqual(conflicted.conflicts, ['a.txt']);
    for (const w of [wt, moved, clash]) await destroyAttemptWorktree(w);
  });

  it('rejects bad input with InputError and creates nothing', async () => {
    await assert.rejects(createAttemptWorktree(repo.dir, 'HEAD', '../escape'), InputError);
    await assert.rejects(createAttemptWorktree(repo.dir, 'HEAD', ''), InputError);
    await assert.rejects(createAttemptWorktree(repo.dir, 'no-such-ref', 'x1'), InputError);
    await assert.rejects(createAttemptWorktree(join(repo.dir, 'missing'), 'HEAD', 'x2'), InputError);
    const wt = await createAttemptWorktree(repo.dir, 'HEAD', 'dup');
    await assert.rejects(createAttemptWorktree(repo.dir, 'HEAD', 'dup'), InputError);
    await destroyAttemptWorktree(wt);
    assert.doesNotMatch(git(repo.dir, 'branch', '--list'), /x1|x2|escape/);
  });

  it('parses .forgeinclude into glob pathspecs', () => {
    assert.deepEqual(includePathspecs(parseForgeIncludeLines('# c\n.env\n /config/*.local.json \n\n')), [
      ':(glob).env',
      ':(glob)config/*.local.json',
    ]);
  });
});
