import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimWorktree, worktreesOverlap } from '../../../runner/src/cells/worktreeClaims.js';

describe('worktree claims: no two running cells on one tree or one inside another', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'forge-claims-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("worktreesOverlap: the same tree or one inside the other, except inside the outer one's .git", () => {
    assert.equal(worktreesOverlap('/r', '/r'), true);
    assert.equal(worktreesOverlap('/r', '/r/sub'), true);
    assert.equal(worktreesOverlap('/r/sub', '/r'), true);
    assert.equal(worktreesOverlap('/r', '/r/.git/forge-cells/a1'), false);
    assert.equal(worktreesOverlap('/r/.git/forge-cells/a1', '/r'), false);
    assert.equal(worktreesOverlap('/r/.git/forge-cells/a1', '/r/.git/forge-cells/a2'), false);
    assert.equal(worktreesOverlap('/r', '/r2'), false);
    assert.equal(worktreesOverlap('/r/.gitx', '/r'), true);
  });

  it('a second cell on the same tree or a nested one is refused while the first runs, and taken after', () => {
    const release = claimWorktree(dir, 'cell-a', '/w');
    assert.throws(() => claimWorktree(dir, 'cell-b', '/w'), /worktree \/w is the worktree \/w of cell-a, a cell still running/);
    assert.throws(() => claimWorktree(dir, 'cell-c', '/w/n'), /overlaps the worktree \/w of cell-a/);
    assert.throws(() => claimWorktree(dir, 'cell-d', '/'), /overlaps/);
    const sibling = claimWorktree(dir, 'cell-e', '/w/.git/forge-cells/x');
    sibling();
    assert.deepEqual(readdirSync(dir), ['cell-a.json'], 'a refused claim is not left behind');
    release();
    claimWorktree(dir, 'cell-f', '/w/n')();
    assert.deepEqual(readdirSync(dir), []);
  });

  it('a claim of a runner that is gone (or whose pid was reused) is removed, not honoured', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    writeFileSync(join(dir, 'cell-dead.json'), JSON.stringify({ pid, start: '1', top: '/w' }));
    writeFileSync(join(dir, 'cell-reused.json'), JSON.stringify({ pid: process.pid, start: 'not-this-one', top: '/w' }));
    writeFileSync(join(dir, 'garbage.json'), '{');
    const release = claimWorktree(dir, 'cell-a', '/w');
    assert.equal(existsSync(join(dir, 'cell-dead.json')), false);
    assert.equal(existsSync(join(dir, 'cell-reused.json')), false);
    release();
  });
});
