// The host steps after a cell (hazard neutralization, diff capture) run as the runner's user
// and find the worktree by path. Whoever can swap a directory on that path during the cell
// could point them anywhere: a root runner clearing setuid bits in /usr or removing device
// nodes in /dev (found by the red team of the VM pool). Each test tries that.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectAfterCell, prepareCellWorktree } from '../../runner/src/cells/cellWorktree.js';
import { chownTree } from '../../runner/src/hostguard/cellUser.js';
import { resolveCellWorktree } from '../../runner/src/workspace/inspectWorktree.js';
import { holdWorktree } from '../../runner/src/hostguard/pinnedDirectory.js';
import { git } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const ROOT = process.getuid?.() === 0;
const OTHER_USER = 1234;

function fifo(path: string): void {
  const r = spawnSync('mkfifo', [path]);
  assert.equal(r.status, 0, String(r.stderr));
}

function repoAt(dir: string): void {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'a.txt'), 'a\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
}

describe('a worktree on a path another user controls (host steps after a cell)', function () {
  this.timeout(120_000);
  let scratch: string;
  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), 'forge-wtpath-'));
  });
  afterEach(() => rmSync(scratch, { recursive: true, force: true }));

  it('a worktree below a directory another user owns is refused before anything runs, in one line', function () {
    requireFeature(this, ROOT, 'needs a root runner (CI runs as root)');
    const home = join(scratch, 'home-of-1234');
    const wt = join(home, 'proj');
    repoAt(wt);
    chownSync(home, OTHER_USER, OTHER_USER);
    const marker = join(scratch, 'ran');
    const r = spawnSync(
      process.execPath,
      [RUNNER, 'cell', 'run', '--provider', 'host', '--worktree', wt, '--', '/bin/sh', '-c', `touch ${marker}`],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.notEqual(r.status, 0, r.stdout);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`${home} is owned by uid ${OTHER_USER}.*run forge-runner as that user`));
    assert.equal(existsSync(marker), false, 'the command ran although the worktree was refused');
  });

  it('a worktree of another user in a sticky world-writable directory is refused; one of the runner in it is taken', async function () {
    requireFeature(this, ROOT, 'needs a root runner (CI runs as root)');
    const sticky = join(scratch, 'shared');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    const theirs = join(sticky, 'theirs');
    repoAt(theirs);
    chownSync(theirs, OTHER_USER, OTHER_USER);
    await assert.rejects(
      prepareCellWorktree({ worktree: theirs, capture_diff: true }, process.env, join(scratch, 'state')),
      /is writable by other users and .*theirs in it is owned by uid 1234/,
    );
    const ours = join(sticky, 'ours');
    repoAt(ours);
    const { worktree } = await prepareCellWorktree({ worktree: ours, capture_diff: true }, process.env, join(scratch, 'state'));
    assert.equal(worktree?.top, ours);
  });

  it("git data owned by another user (a .git file naming it) is refused: its index, refs or alternates could point the diff at root's files", async function () {
    requireFeature(this, ROOT, 'needs a root runner (CI runs as root)');
    const theirs = join(scratch, 'theirs');
    mkdirSync(theirs);
    chownSync(theirs, OTHER_USER, OTHER_USER);
    const src = join(scratch, 'src');
    mkdirSync(src);
    git(src, 'init', '-q', '-b', 'main', `--separate-git-dir=${join(theirs, 'gd')}`);
    writeFileSync(join(src, 'a.txt'), 'a\n');
    git(src, 'add', '-A');
    git(src, 'commit', '-q', '-m', 'base');
    spawnSync('chown', ['-R', `${OTHER_USER}:${OTHER_USER}`, join(theirs, 'gd')]);
    await assert.rejects(
      prepareCellWorktree({ worktree: src, capture_diff: true }, process.env, join(scratch, 'state')),
      new RegExp(`${theirs} is owned by uid ${OTHER_USER}, so another user could redirect`),
    );
    // Root's own git directory, but writable by its group: the same.
    spawnSync('chown', ['-R', '0:0', theirs]);
    chmodSync(join(theirs, 'gd'), 0o775);
    await assert.rejects(
      prepareCellWorktree({ worktree: src, capture_diff: true }, process.env, join(scratch, 'state')),
      /gd is writable by its group/,
    );
    chmodSync(join(theirs, 'gd'), 0o755);
    await prepareCellWorktree({ worktree: src, capture_diff: true }, process.env, join(scratch, 'state'));
  });

  it("a second cell on a running cell's tree, inside it, inside a .git it made, or with git data in it is refused until that cell ends", async function () {
    // The running cell's tree has no .git: one it makes during the cell is not read-only.
    const host = join(scratch, 'host');
    mkdirSync(join(host, 'inner'), { recursive: true });
    if (ROOT) chownSync(host, 65532, 65532);
    // A worktree elsewhere whose git data lies in the running cell's tree.
    const src = join(scratch, 'src');
    mkdirSync(src);
    git(src, 'init', '-q', '-b', 'main', `--separate-git-dir=${join(host, 'gd')}`);
    writeFileSync(join(src, 'a.txt'), 'a\n');
    git(src, 'add', '-A');
    git(src, 'commit', '-q', '-m', 'base');
    const busy = join(process.env.FORGE_STATE_DIR!, 'busy');
    const claims = () => (existsSync(busy) ? readdirSync(busy).length : 0);
    const before = claims();
    const first = spawn(
      process.execPath,
      [RUNNER, 'cell', 'run', '--provider', 'host', '--no-diff', '--worktree', host, '--', '/bin/sh', '-c', 'mkdir -p .git/d && sleep 5'],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((r) => first.once('exit', r));
    const second = (worktree: string, diff: boolean, cmd: string) =>
      spawnSync(
        process.execPath,
        [RUNNER, 'cell', 'run', '--provider', 'host', ...(diff ? [] : ['--no-diff']), '--worktree', worktree, '--', '/bin/sh', '-c', cmd],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
    try {
      for (let i = 0; i < 200 && !(claims() > before && existsSync(join(host, '.git', 'd'))); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.ok(claims() > before && existsSync(join(host, '.git', 'd')), 'the first cell never claimed its worktree and made .git/d');
      for (const [worktree, diff] of [
        [host, false],
        [join(host, 'inner'), false],
        [join(host, '.git', 'd'), false],
        [src, true],
      ] as const) {
        const marker = join(scratch, 'ran');
        const r = second(worktree, diff, `touch ${marker}`);
        assert.equal(r.status, 2, `${worktree}: ${r.stderr}`);
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
        // The tree itself now holds the .git its cell made: refused for that first, which is as good.
        assert.match(
          r.stderr,
          worktree === host
            ? /a cell still running|is not usable git data/
            : /a cell still running.*wait for it to end or use another worktree/,
        );
        assert.equal(existsSync(marker), false);
      }
    } finally {
      await exited;
    }
    assert.equal(second(join(host, 'inner'), false, 'true').status, 0);
    assert.equal(second(src, true, 'true').status, 0);
  });

  it("a tree in a running cell's read-only .git is refused except in its forge-cells directory (elsewhere it could write the alternates that cell's diff reads)", async function () {
    const repo = join(scratch, 'repo');
    repoAt(repo);
    mkdirSync(join(repo, '.git', 'forge-cells', 'x'), { recursive: true });
    const busy = join(process.env.FORGE_STATE_DIR!, 'busy');
    const claims = () => (existsSync(busy) ? readdirSync(busy).length : 0);
    const before = claims();
    const first = spawn(
      process.execPath,
      [RUNNER, 'cell', 'run', '--provider', 'host', '--worktree', repo, '--', '/bin/sh', '-c', 'sleep 4'],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((r) => first.once('exit', r));
    const second = (worktree: string) =>
      spawnSync(process.execPath, [RUNNER, 'cell', 'run', '--provider', 'host', '--no-diff', '--worktree', worktree, '--', '/bin/true'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
    try {
      for (let i = 0; i < 200 && claims() === before; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(claims() > before, 'the first cell never claimed its worktree');
      const inObjects = second(join(repo, '.git', 'objects', 'info'));
      assert.equal(inObjects.status, 2, inObjects.stderr);
      assert.match(inObjects.stderr, /overlaps the worktree .* a cell still running/);
      const attempt = second(join(repo, '.git', 'forge-cells', 'x'));
      assert.equal(attempt.status, 0, attempt.stderr);
    } finally {
      await exited;
    }
  });

  it('a .git swapped since the check (another directory put in its place) is not what the sandbox binds read-only', async function () {
    const repo = join(scratch, 'repo');
    repoAt(repo);
    const checked = (await resolveCellWorktree({ worktree: repo, capture_diff: true }))!;
    const held = holdWorktree(checked.top, checked.identity, true, checked.gitIdentity);
    assert.equal(statSync(held.git!).ino, statSync(join(repo, '.git')).ino);
    held.close();
    renameSync(join(repo, '.git'), join(repo, 'old-git'));
    mkdirSync(join(repo, '.git'));
    assert.throws(() => holdWorktree(checked.top, checked.identity, true, checked.gitIdentity), /\.git is not the one that was checked/);
  });

  it('one tree bind-mounted at a second path is one tree: a cell through the other path is refused while the first runs', async function () {
    requireFeature(this, ROOT, 'needs a root runner (bind mounts; CI runs as root)');
    const tree = join(scratch, 'B');
    const alias = join(scratch, 'B2');
    mkdirSync(join(tree, 'n'), { recursive: true });
    mkdirSync(alias);
    assert.equal(spawnSync('mount', ['--bind', tree, alias]).status, 0);
    const busy = join(process.env.FORGE_STATE_DIR!, 'busy');
    const claims = () => (existsSync(busy) ? readdirSync(busy).length : 0);
    const before = claims();
    const first = spawn(
      process.execPath,
      [RUNNER, 'cell', 'run', '--provider', 'host', '--no-diff', '--worktree', tree, '--', '/bin/sh', '-c', 'sleep 4'],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((r) => first.once('exit', r));
    try {
      for (let i = 0; i < 200 && claims() === before; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(claims() > before, 'the first cell never claimed its worktree');
      for (const other of [alias, join(alias, 'n')]) {
        const r = spawnSync(
          process.execPath,
          [RUNNER, 'cell', 'run', '--provider', 'host', '--no-diff', '--worktree', other, '--', '/bin/true'],
          {
            encoding: 'utf8',
            timeout: 60_000,
          },
        );
        assert.equal(r.status, 2, `${other}: ${r.stderr}`);
        assert.match(r.stderr, /a cell still running/);
      }
    } finally {
      await exited;
      spawnSync('umount', [alias]);
    }
  });

  it('a worktree swapped for a link during the cell: nothing is neutralized or read where the link points', async function () {
    const parent = join(scratch, 'p');
    const wt = join(parent, 'bin');
    repoAt(wt);
    const { worktree } = await prepareCellWorktree({ worktree: wt, capture_diff: true }, process.env, join(scratch, 'state'));
    // The victim: a directory with a FIFO and a setuid file, as /usr/bin or /dev would have.
    const victim = join(scratch, 'victim');
    mkdirSync(victim);
    fifo(join(victim, 'pipe'));
    writeFileSync(join(victim, 'tool'), '#!/bin/sh\n');
    chmodSync(join(victim, 'tool'), 0o4755);
    writeFileSync(join(victim, 'secret.txt'), 'not for the diff\n');
    // During the cell: the worktree moves away and a link to the victim takes its name.
    renameSync(wt, join(parent, 'moved'));
    symlinkSync(victim, wt);
    const after = await collectAfterCell(worktree, true);
    assert.equal(statSync(join(victim, 'pipe')).isFIFO(), true, 'a FIFO outside the worktree was removed');
    assert.equal(statSync(join(victim, 'tool')).mode & 0o4000, 0o4000, 'a setuid bit outside the worktree was cleared');
    assert.deepEqual(after.neutralized, []);
    assert.equal(after.diff?.files.length, 0);
    assert.equal(after.diff?.patch.includes('not for the diff'), false);
    assert.match(after.warnings.join('\n'), /changed since it was checked.*nothing was read from it after the cell/);
  });

  it('a .git or git data directory swapped between the check and the diff: the diff reads none of it (red team round 4)', async function () {
    for (const swap of ['.git', 'objects'] as const) {
      const wt = join(scratch, `swap-${swap}`);
      repoAt(wt);
      const { worktree } = await prepareCellWorktree({ worktree: wt, capture_diff: true }, process.env, join(scratch, 'state'));
      writeFileSync(join(wt, 'a.txt'), 'changed\n');
      writeFileSync(join(wt, 'tool'), '#!/bin/sh\n');
      chmodSync(join(wt, 'tool'), 0o4755);
      // Another .git (or objects directory) with the same content takes the checked one's name.
      const moved = join(scratch, `moved-${swap}`);
      const at = swap === '.git' ? join(wt, '.git') : join(wt, '.git', 'objects');
      renameSync(at, moved);
      assert.equal(spawnSync('cp', ['-a', moved, at]).status, 0);
      const after = await collectAfterCell(worktree, true);
      assert.equal(after.diff?.files.length, 0, swap);
      assert.equal(statSync(join(wt, 'tool')).mode & 0o4000, 0, 'the hazards the cell left are neutralized all the same');
      assert.match(after.warnings.join('\n'), /not the (one|directory) that was checked.*nothing was read from it after the cell/, swap);
    }
  });

  it('handing a tree to the cell user changes links, never what they point to, and skips .git (chownTree walks by descriptor)', function () {
    requireFeature(this, ROOT, 'needs a root runner (chown; CI runs as root)');
    const tree = join(scratch, 'handed');
    const outside = join(scratch, 'outside');
    mkdirSync(join(tree, '.git'), { recursive: true });
    mkdirSync(join(tree, 'd'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, 'f'), 'x');
    writeFileSync(join(tree, '.git', 'HEAD'), 'x');
    writeFileSync(join(tree, 'd', Buffer.from([0x66, 0xff]).toString('latin1')), 'x');
    symlinkSync(outside, join(tree, 'd', 'link'));
    chownTree(tree, { uid: OTHER_USER, gid: OTHER_USER }, ['.git']);
    assert.equal(lstatSync(join(tree, 'd', 'link')).uid, OTHER_USER);
    assert.equal(statSync(outside).uid, 0, 'a link was followed');
    assert.equal(statSync(join(outside, 'f')).uid, 0, 'a link was followed');
    assert.equal(statSync(join(tree, '.git', 'HEAD')).uid, 0, '.git was not skipped');
    assert.ok(readdirSync(join(tree, 'd')).every((n) => lstatSync(join(tree, 'd', n)).uid === OTHER_USER));
  });

  it('a directory above the worktree swapped for a link during the cell: same, nothing touched there', async function () {
    const parent = join(scratch, 'usr');
    const wt = join(parent, 'bin');
    repoAt(wt);
    const { worktree } = await prepareCellWorktree({ worktree: wt, capture_diff: true }, process.env, join(scratch, 'state'));
    const decoy = join(scratch, 'decoy');
    repoAt(join(decoy, 'bin'));
    fifo(join(decoy, 'bin', 'pipe'));
    renameSync(parent, join(scratch, 'usr-moved'));
    symlinkSync(decoy, parent);
    const after = await collectAfterCell(worktree, true);
    assert.equal(statSync(join(decoy, 'bin', 'pipe')).isFIFO(), true, 'a FIFO in the directory the link points to was removed');
    assert.match(after.warnings.join('\n'), /changed since it was checked/);
  });

  it('another directory put in the worktree place (not a link) is told apart by its identity', async function () {
    const wt = join(scratch, 'w');
    repoAt(wt);
    const { worktree } = await prepareCellWorktree({ worktree: wt, capture_diff: true }, process.env, join(scratch, 'state'));
    renameSync(wt, join(scratch, 'w-old'));
    repoAt(wt);
    fifo(join(wt, 'pipe'));
    const after = await collectAfterCell(worktree, true);
    assert.equal(statSync(join(wt, 'pipe')).isFIFO(), true);
    assert.match(after.warnings.join('\n'), /is not the directory that was checked/);
  });

  it('the worktree that was checked still gets its hazards neutralized and its diff', async function () {
    const wt = join(scratch, 'ok');
    repoAt(wt);
    const { worktree } = await prepareCellWorktree({ worktree: wt, capture_diff: true }, process.env, join(scratch, 'state'));
    fifo(join(wt, 'pipe'));
    writeFileSync(join(wt, 'a.txt'), 'b\n');
    const after = await collectAfterCell(worktree, true);
    assert.equal(existsSync(join(wt, 'pipe')), false);
    assert.deepEqual(
      after.neutralized.map((n) => n.path),
      ['pipe'],
    );
    assert.deepEqual(
      after.diff?.files.map((f) => f.path),
      ['a.txt'],
    );
  });
});
