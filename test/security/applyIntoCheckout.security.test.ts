import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { applyIntoCheckout } from '../../runner/src/workspace/applyIntoCheckout.js';
import { copiedFromOutside } from '../../runner/src/workspace/applyPatch.js';
import { attemptTree } from '../../runner/src/workspace/attemptTree.js';
import { readRecord, restoreCheckout } from '../../runner/src/workspace/checkoutUndo.js';
import { selectFromPatch } from '../../runner/src/workspace/patchHunks.js';
import { git, makeRepo, scratchDir } from '../helpers/gitRepo.js';

/**
 * Red team of Apply / Apply Part / merge / Undo: a patch (the agent's work) names files to
 * trick Forge into reporting, undoing or writing the wrong thing. Each case failed before.
 */
describe('security: apply into a checkout and undo it, against hostile patches', () => {
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
  const text = (xs: string[]) => xs.join('\n') + '\n';
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    while (cleanups.length) cleanups.pop()!();
  });

  /** A repo, the attempt's edits made by `edit` captured as the runner does, the checkout reset. */
  function setup(files: Record<string, string>, edit: (dir: string) => void) {
    const r = makeRepo(files);
    cleanups.push(r.cleanup);
    const base = git(r.dir, 'rev-parse', 'HEAD').trim();
    edit(r.dir);
    git(r.dir, 'add', '-A');
    const patch = execFileSync(
      'git',
      ['-c', 'safe.directory=*', '-c', 'core.quotePath=false', 'diff', '--cached', '--no-color', '--binary', '--full-index', '-M'],
      { cwd: r.dir },
    );
    git(r.dir, 'reset', '-q', '--hard');
    git(r.dir, 'clean', '-qfdx');
    const state = scratchDir('forge-undo-sec-');
    cleanups.push(state.cleanup);
    const undoRoot = join(state.dir, 'run-x');
    const req = async (p: Buffer = patch, merge = true) => ({
      repo: r.dir,
      runId: 'run-x',
      attempt: 1,
      baseCommit: base,
      theirsTree: await attemptTree(r.dir, base, p),
      patch: p,
      undoRoot,
      merge,
    });
    return { dir: r.dir, patch, req, undoRoot };
  }

  it('a file named "x<TAB>NOTES.md" is reported and undone as itself: undo never deletes the user\'s NOTES.md (finding 1)', async () => {
    const s = setup({ 'a.txt': 'a\n', 'config.ts': 'user v1\n' }, (d) => {
      writeFileSync(join(d, 'x\tNOTES.md'), 'attacker\n');
      writeFileSync(join(d, 'x\tconfig.ts'), 'attacker2\n');
    });
    const out = await applyIntoCheckout(await s.req());
    assert.deepEqual(out.files.map((f) => f.path).sort(), ['x\tNOTES.md', 'x\tconfig.ts']);
    writeFileSync(join(s.dir, 'NOTES.md'), 'my notes\n');
    writeFileSync(join(s.dir, 'config.ts'), 'user v2\n');
    const back = restoreCheckout(readRecord(s.undoRoot)!);
    assert.deepEqual(back.failed, []);
    assert.equal(readFileSync(join(s.dir, 'NOTES.md'), 'utf8'), 'my notes\n', "the user's file stays");
    assert.equal(readFileSync(join(s.dir, 'config.ts'), 'utf8'), 'user v2\n', "the user's edit stays");
    assert.equal(existsSync(join(s.dir, 'x\tNOTES.md')), false, "the attempt's file is gone");
    assert.equal(existsSync(join(s.dir, 'x\tconfig.ts')), false);
  });

  it('a name that is not valid UTF-8 is refused in one line, nothing written, no undo record (finding 1)', async () => {
    const bad = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x6a, 0x73]); // caf\xe9.js
    const s = setup({ 'a.txt': 'a\n' }, (d) => {
      writeFileSync(Buffer.concat([Buffer.from(d + '/'), bad]), 'payload\n');
      writeFileSync(join(d, 'a.txt'), 'A\n');
    });
    await assert.rejects(applyIntoCheckout(await s.req()), (e: Error) => {
      assert.match(e.message, /not valid UTF-8 \("caf\\\\xe9\.js"\).*nothing was written/);
      assert.equal(e.message.split('\n').length, 1);
      return true;
    });
    assert.equal(git(s.dir, 'status', '--porcelain'), '');
    assert.equal(readRecord(s.undoRoot), null);
  });

  it('undo removes a symbolic link the patch created, and every other entry (finding 4)', async () => {
    const s = setup({ 'a.txt': 'a\n', 'b.txt': 'b\n' }, (d) => {
      writeFileSync(join(d, 'a.txt'), 'A\n');
      symlinkSync('/etc/passwd', join(d, 'aaa-link'));
      writeFileSync(join(d, 'b.txt'), 'B\n');
    });
    const out = await applyIntoCheckout(await s.req());
    assert.equal(out.applied, true);
    assert.equal(lstatSync(join(s.dir, 'aaa-link')).isSymbolicLink(), true);
    const back = restoreCheckout(readRecord(s.undoRoot)!);
    assert.deepEqual(back.failed, []);
    assert.equal(git(s.dir, 'status', '--porcelain'), '', 'the link is gone and a.txt, b.txt are restored');
  });

  it('a failed write is rolled back over every entry (a created link too), leaves no undo record, and Undo still undoes the last good apply (findings 5, 6)', async () => {
    const s = setup({ 'a.txt': text(lines), 'm.txt': text(lines), 'p.txt': 'p\n' }, (d) => {
      const c = [...lines];
      c[3] = 'attempt';
      writeFileSync(join(d, 'm.txt'), text(c));
      writeFileSync(join(d, 'a.txt'), text(c));
      writeFileSync(join(d, 'p.txt'), 'P from attempt\n');
      symlinkSync('/etc/passwd', join(d, 'b-link'));
      writeFileSync(join(d, 'c-new.txt'), 'new\n');
    });
    // A good apply first: p.txt alone.
    const p = selectFromPatch(s.patch, { hunks: ['f4h0'] });
    assert.match(p.patch.toString('latin1'), /p\.txt/);
    const good = await applyIntoCheckout(await s.req(p.patch));
    assert.equal(good.applied, true);
    // The rest needs a merge of m.txt, which cannot be written (immutable).
    const mine = [...lines];
    mine[5] = 'my edit';
    writeFileSync(join(s.dir, 'm.txt'), text(mine));
    const rest = selectFromPatch(s.patch, { files: ['f1', 'f2'], hunks: ['f0h0', 'f3h0'] });
    execFileSync('chattr', ['+i', join(s.dir, 'm.txt')]);
    try {
      await assert.rejects(applyIntoCheckout(await s.req(rest.patch)), /the apply failed while writing and was undone, nothing changed/);
    } finally {
      execFileSync('chattr', ['-i', join(s.dir, 'm.txt')]);
    }
    assert.equal(existsSync(join(s.dir, 'b-link')), false, 'the created link is removed');
    const status = git(s.dir, 'status', '--porcelain').split('\n').filter(Boolean);
    assert.deepEqual(status.map((l) => l.trim()).sort(), ['M m.txt', 'M p.txt'], 'only the user edit and the good apply remain');
    assert.deepEqual(readdirSync(s.undoRoot), [good.undo!.id], 'the failed apply left no record');
    assert.equal(readRecord(s.undoRoot)!.id, good.undo!.id);
    assert.deepEqual(restoreCheckout(readRecord(s.undoRoot)!).restored, ['p.txt']);
    assert.equal(readFileSync(join(s.dir, 'm.txt'), 'utf8'), text(mine), "undo leaves the user's edit");
  });

  it('undo goes on past an entry it cannot restore and names it (finding 5)', async () => {
    const s = setup({ 'a.txt': 'a\n', 'b.txt': 'b\n' }, (d) => {
      writeFileSync(join(d, 'a.txt'), 'A\n');
      writeFileSync(join(d, 'b.txt'), 'B\n');
    });
    await applyIntoCheckout(await s.req());
    rmSync(join(s.dir, 'a.txt'));
    mkdirSync(join(s.dir, 'a.txt'));
    writeFileSync(join(s.dir, 'a.txt', 'in'), 'x');
    const back = restoreCheckout(readRecord(s.undoRoot)!);
    assert.deepEqual(back.restored, ['b.txt']);
    assert.deepEqual(
      back.failed.map((f) => f.path),
      ['a.txt'],
    );
    assert.equal(readFileSync(join(s.dir, 'b.txt'), 'utf8'), 'b\n');
  });

  it('a merge and an undo never write through a hard link to a file outside the checkout (finding 7)', async () => {
    const s = setup({ 'a.txt': text(lines) }, (d) => {
      const c = [...lines];
      c[2] = 'ATTEMPT PAYLOAD';
      writeFileSync(join(d, 'a.txt'), text(c));
    });
    const outsideDir = scratchDir('forge-outside-');
    cleanups.push(outsideDir.cleanup);
    const outside = join(outsideDir.dir, 'shared.txt');
    const mine = [...lines];
    mine[5] = 'user edit'; // next to the attempt's line: not clean, merged 3-way
    writeFileSync(join(s.dir, 'a.txt'), text(mine));
    execFileSync('chmod', ['0640', join(s.dir, 'a.txt')]);
    linkSync(join(s.dir, 'a.txt'), outside);
    const out = await applyIntoCheckout(await s.req());
    assert.equal(out.mode, 'three-way');
    assert.match(readFileSync(join(s.dir, 'a.txt'), 'utf8'), /ATTEMPT PAYLOAD/);
    assert.equal(readFileSync(outside, 'utf8'), text(mine), 'the outside file is untouched');
    assert.equal(statSync(join(s.dir, 'a.txt')).mode & 0o777, 0o640, 'the mode is kept');
    // Undo too: link the merged file out again, then undo.
    rmSync(outside);
    linkSync(join(s.dir, 'a.txt'), outside);
    assert.deepEqual(restoreCheckout(readRecord(s.undoRoot)!).failed, []);
    assert.equal(readFileSync(join(s.dir, 'a.txt'), 'utf8'), text(mine));
    assert.match(readFileSync(outside, 'utf8'), /ATTEMPT PAYLOAD/, 'undo replaced the checkout file, not the outside one');
  });

  it('a copy or rename source C-quoted to point outside ("\\057tmp/x", "\\056\\056/x") is refused (finding 8)', () => {
    for (const src of ['"\\057tmp/rt-secret"', '"\\056\\056/\\056\\056/etc/passwd"', '"a/\\.\\./x"'])
      assert.notEqual(
        copiedFromOutside(Buffer.from(`diff --git a/x b/stolen.txt\nsimilarity index 100%\ncopy from ${src}\ncopy to stolen.txt\n`)),
        null,
        src,
      );
    assert.equal(copiedFromOutside(Buffer.from('diff --git a/x b/y\nrename from "caf\\303\\251"\nrename to y\n')), null);
  });

  it('a file with a 250-byte name applies and undoes (finding 9)', async () => {
    const name = 'L'.repeat(250) + '.txt';
    const s = setup({ [name]: 'a\n' }, (d) => writeFileSync(join(d, name), 'b\n'));
    const out = await applyIntoCheckout(await s.req());
    assert.equal(out.applied, true);
    assert.equal(readFileSync(join(s.dir, name), 'utf8'), 'b\n');
    assert.deepEqual(restoreCheckout(readRecord(s.undoRoot)!).failed, []);
    assert.equal(readFileSync(join(s.dir, name), 'utf8'), 'a\n');
  });

  it('undo of a rename puts the renamed file back under its old name', async () => {
    const body = text(lines);
    const s = setup({ 'old.txt': body }, (d) => {
      git(d, 'mv', 'old.txt', 'new.txt');
    });
    const out = await applyIntoCheckout(await s.req());
    assert.equal(out.applied, true);
    assert.equal(existsSync(join(s.dir, 'old.txt')), false);
    assert.deepEqual(restoreCheckout(readRecord(s.undoRoot)!).failed, []);
    assert.equal(readFileSync(join(s.dir, 'old.txt'), 'utf8'), body);
    assert.equal(git(s.dir, 'status', '--porcelain'), '');
  });
});
