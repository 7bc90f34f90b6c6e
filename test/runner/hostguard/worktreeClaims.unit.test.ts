import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimsConflict, claimWorktree, type TreeClaim } from '../../../runner/src/hostguard/worktreeClaims.js';

/** A tree; `git: true` gives it a .git directory (read-only in its cell) and the git data in it. */
const tree = (top: string, opts: { git?: boolean; gitData?: string[] } = {}): TreeClaim => ({
  top,
  roGit: opts.git ? `${top}/.git` : null,
  gitData: opts.gitData ?? (opts.git ? [`${top}/.git`, `${top}/.git/objects`] : []),
  ids: { top: [], roGit: null, gitData: [] },
});

describe("worktree claims: no two running cells on one tree, one inside another, or one on the other's git data", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'forge-claims-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("the same tree or one inside the other conflicts; a tree inside the other's read-only .git does not", () => {
    const repo = tree('/r', { git: true });
    const attempt = tree('/r/.git/forge-cells/a1', { gitData: ['/r/.git/worktrees/a1', '/r/.git', '/r/.git/objects'] });
    assert.equal(claimsConflict(repo, tree('/r')), true);
    assert.equal(claimsConflict(repo, tree('/r/sub')), true);
    assert.equal(claimsConflict(tree('/r/sub'), repo), true);
    assert.equal(claimsConflict(repo, attempt), false);
    assert.equal(claimsConflict(attempt, repo), false);
    assert.equal(claimsConflict(attempt, tree('/r/.git/forge-cells/a2', { gitData: ['/r/.git/worktrees/a2', '/r/.git'] })), false);
    assert.equal(claimsConflict(repo, tree('/r2')), false);
    assert.equal(claimsConflict(repo, tree('/r/.gitx')), true);
  });

  it("a tree elsewhere in another's read-only .git conflicts: there it could write what that cell's diff reads (alternates, attributes)", () => {
    const repo = tree('/r', { git: true });
    assert.equal(claimsConflict(repo, tree('/r/.git/objects/info')), true);
    assert.equal(claimsConflict(tree('/r/.git/info'), repo), true);
    assert.equal(claimsConflict(repo, tree('/r/.git/forge-cellsx')), true);
    assert.equal(claimsConflict(repo, tree('/r/.git/forge-cells/a1')), false);
  });

  it('a .git the cell made after the check is not read-only: a tree inside it conflicts', () => {
    assert.equal(claimsConflict(tree('/p'), tree('/p/.git/d')), true);
  });

  it("git data inside another running cell's tree conflicts either way round", () => {
    const outer = tree('/host');
    const b = tree('/w', { gitData: ['/host/gd', '/host/gd/objects'] });
    assert.equal(claimsConflict(b, outer), true);
    assert.equal(claimsConflict(outer, b), true);
    assert.equal(claimsConflict(b, tree('/elsewhere')), false);
  });

  it('by identity: one tree reached through two paths (a bind mount) is one tree, inside it too; its read-only .git still is not', () => {
    // Directories by device:inode: / = r, /srv = s, the tree = t, its .git = g, a directory in it = n.
    const a = { ...tree('/srv/B'), ids: { top: ['r', 's', 't'], roGit: 'g', attempts: 'f', gitData: [['r', 's', 't', 'g']] } };
    const alias = { ...tree('/mnt/B2'), ids: { top: ['r', 'm', 't'], roGit: 'g', attempts: 'f', gitData: [] } };
    const nested = { ...tree('/mnt/B2/n'), ids: { top: ['r', 'm', 't', 'n'], roGit: null, gitData: [] } };
    const inGit = { ...tree('/mnt/B2/.git/forge-cells/x'), ids: { top: ['r', 'm', 't', 'g', 'f', 'x'], roGit: null, gitData: [] } };
    const gitDataIn = { ...tree('/w'), ids: { top: ['r', 'w'], roGit: null, gitData: [['r', 'm', 't', 'n', 'gd']] } };
    assert.equal(claimsConflict(a, alias), true);
    assert.equal(claimsConflict(nested, a), true);
    assert.equal(claimsConflict(a, inGit), false);
    // Elsewhere in the .git (its objects/info = o) through the alias: a conflict.
    const inObjects = { ...tree('/mnt/B2/.git/objects/info'), ids: { top: ['r', 'm', 't', 'g', 'o'], roGit: null, gitData: [] } };
    assert.equal(claimsConflict(a, inObjects), true);
    // Git data in the read-only .git (a linked worktree's) is out of that cell's reach.
    const linked = { ...tree('/elsewhere'), ids: { top: ['r', 'e'], roGit: null, gitData: [['r', 'm', 't', 'g', 'wt']] } };
    assert.equal(claimsConflict(a, linked), false);
    assert.equal(claimsConflict(gitDataIn, { ...a, roGit: null, ids: { ...a.ids, roGit: null } }), true);
    assert.equal(claimsConflict(a, { ...tree('/other'), ids: { top: ['r', 'o'], roGit: null, gitData: [] } }), false);
  });

  it('a second cell on the same tree or a nested one is refused while the first runs, and taken after', () => {
    const release = claimWorktree(dir, 'cell-a', tree('/w', { git: true }));
    assert.throws(() => claimWorktree(dir, 'cell-b', tree('/w')), /worktree \/w is the worktree \/w of cell-a, a cell still running/);
    assert.throws(() => claimWorktree(dir, 'cell-c', tree('/w/n')), /overlaps the worktree \/w of cell-a/);
    assert.throws(() => claimWorktree(dir, 'cell-d', tree('/')), /overlaps/);
    claimWorktree(dir, 'cell-e', tree('/w/.git/forge-cells/x'))();
    assert.deepEqual(readdirSync(dir), ['cell-a.json'], 'a refused claim is not left behind');
    release();
    claimWorktree(dir, 'cell-f', tree('/w/n'))();
    assert.deepEqual(readdirSync(dir), []);
  });

  it('a claim of a runner that is gone (or whose pid was reused) is removed, not honoured; a malformed one is ignored', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    const claim = (p: number, start: string) =>
      JSON.stringify({ pid: p, start, top: '/w', roGit: null, gitData: [], ids: { top: [], roGit: null, gitData: [] } });
    writeFileSync(join(dir, 'cell-dead.json'), claim(pid, '1'));
    writeFileSync(join(dir, 'cell-reused.json'), claim(process.pid, 'not-this-one'));
    writeFileSync(join(dir, 'garbage.json'), '{');
    const release = claimWorktree(dir, 'cell-a', tree('/w'));
    assert.equal(existsSync(join(dir, 'cell-dead.json')), false);
    assert.equal(existsSync(join(dir, 'cell-reused.json')), false);
    release();
  });
});
