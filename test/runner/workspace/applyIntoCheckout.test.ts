import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { handOverToCellUser } from '../../../runner/src/hostguard/cellUser.js';
import { applyIntoCheckout } from '../../../runner/src/workspace/applyIntoCheckout.js';
import { attemptTree } from '../../../runner/src/workspace/attemptTree.js';
import { readRecord, restoreCheckout } from '../../../runner/src/workspace/checkoutUndo.js';
import { listPatchFiles, selectFromPatch } from '../../../runner/src/workspace/patchHunks.js';
import { git, makeRepo, scratchDir } from '../../helpers/gitRepo.js';

/** Apply into the user's checkout: a part, a 3-way merge with the user's edits, conflicts, undo. */
describe('apply into a checkout: part of a change, 3-way merge, undo', () => {
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
  const text = (xs: string[]) => xs.join('\n') + '\n';

  function setup() {
    const r = makeRepo({ 'a.txt': text(lines), 'b.txt': 'b\n' });
    const base = git(r.dir, 'rev-parse', 'HEAD').trim();
    const changed = [...lines];
    changed[3] = 'attempt three';
    changed[30] = 'attempt thirty';
    writeFileSync(join(r.dir, 'a.txt'), text(changed));
    writeFileSync(join(r.dir, 'new.txt'), 'new\n');
    git(r.dir, 'add', '-A');
    const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--cached', '--binary'], { cwd: r.dir });
    git(r.dir, 'reset', '-q', '--hard');
    // reset wrote the files anew as this user: the checkout is the cell user's again, as a user's would be.
    handOverToCellUser(r.dir);
    const state = scratchDir('forge-undo-');
    const req = async (p: Buffer, merge = true) => ({
      repo: r.dir,
      runId: 'run-x',
      attempt: 1,
      baseCommit: base,
      theirsTree: await attemptTree(r.dir, base, p),
      patch: p,
      undoRoot: join(state.dir, 'run-x'),
      merge,
    });
    return { ...r, base, patch, state, req, cleanupAll: () => (r.cleanup(), state.cleanup()) };
  }

  it('a hunk applied alone leaves the other hunks and files out', async () => {
    const s = setup();
    try {
      const [a] = listPatchFiles(s.patch);
      const part = selectFromPatch(s.patch, { hunks: [a!.hunks[1]!.id] });
      assert.equal(part.leftOut.length, 2);
      const out = await applyIntoCheckout(await s.req(part.patch));
      assert.equal(out.mode, 'clean');
      const now = readFileSync(join(s.dir, 'a.txt'), 'utf8');
      assert.match(now, /attempt thirty/);
      assert.doesNotMatch(now, /attempt three\n/);
      assert.equal(git(s.dir, 'status', '--porcelain').trim(), 'M a.txt');
    } finally {
      s.cleanupAll();
    }
  });

  it('a checkout edited elsewhere in the file is merged 3-way; an edit on the same line conflicts, undo restores the bytes', async () => {
    const s = setup();
    try {
      const mine = [...lines];
      mine[10] = 'my ten';
      writeFileSync(join(s.dir, 'a.txt'), text(mine));
      const plain = await applyIntoCheckout(await s.req(s.patch, false));
      assert.equal(plain.applied, true, 'git apply alone takes an edit away from the hunks');
      restoreCheckout(readRecord(join(s.state.dir, 'run-x'))!);
      assert.equal(readFileSync(join(s.dir, 'a.txt'), 'utf8'), text(mine));
      git(s.dir, 'clean', '-qfd');

      mine[3] = 'my three';
      const before = Buffer.from(text(mine) + '\r\nno final newline', 'latin1');
      writeFileSync(join(s.dir, 'a.txt'), before);
      const refused = await applyIntoCheckout(await s.req(s.patch, false));
      assert.equal(refused.applied, false);
      assert.equal(readFileSync(join(s.dir, 'a.txt')).equals(before), true, 'nothing written without merge');
      const merged = await applyIntoCheckout(await s.req(s.patch));
      assert.equal(merged.mode, 'conflicts');
      assert.deepEqual(
        merged.conflicts.map((c) => c.path),
        ['a.txt'],
      );
      assert.equal(readFileSync(merged.conflicts[0]!.before).equals(before), true, 'the saved side is what the checkout held');
      const now = readFileSync(join(s.dir, 'a.txt'), 'utf8');
      assert.match(now, /<<<<<<< your checkout\nmy three\n=======\nattempt three\n>>>>>>> attempt 1/);
      assert.match(now, /attempt thirty/);
      assert.equal(readFileSync(join(s.dir, 'new.txt'), 'utf8'), 'new\n', 'everything else is applied');
      // A root runner leaves the files it wrote (new ones included) with the checkout's owner.
      const owner = statSync(s.dir).uid;
      assert.deepEqual([statSync(join(s.dir, 'a.txt')).uid, statSync(join(s.dir, 'new.txt')).uid], [owner, owner]);
      const restored = restoreCheckout(readRecord(join(s.state.dir, 'run-x'), merged.undo!.id)!);
      assert.deepEqual(restored.restored.sort(), ['a.txt', 'new.txt']);
      assert.equal(readFileSync(join(s.dir, 'a.txt')).equals(before), true, 'undo puts back the exact bytes');
      assert.equal(git(s.dir, 'status', '--porcelain').trim(), 'M a.txt');
    } finally {
      s.cleanupAll();
    }
  });

  it("conflicts: 'yours' keeps the user's lines where they conflict, merges the attempt's other hunks, and saves the side merged in", async () => {
    const s = setup();
    try {
      const mine = [...lines];
      mine[3] = 'my three';
      const before = Buffer.from(text(mine), 'latin1');
      writeFileSync(join(s.dir, 'a.txt'), before);
      const out = await applyIntoCheckout({ ...(await s.req(s.patch)), conflicts: 'yours' });
      assert.equal(out.applied, true);
      assert.equal(out.mode, 'conflicts');
      assert.deepEqual(
        out.conflicts.map((c) => c.path),
        ['a.txt'],
      );
      // No state of the file on disk loses the user's edit (an editor that resets a file with markers to the base cannot either),
      // and the attempt's hunk that does not conflict is in (the drive found it left out).
      const expected = [...mine];
      expected[30] = 'attempt thirty';
      assert.equal(readFileSync(join(s.dir, 'a.txt'), 'utf8'), text(expected), 'your line 3, the attempt line 30, no markers');
      assert.equal(readFileSync(out.conflicts[0]!.before).equals(before), true, "the merge editor's side is what the checkout held");
      const theirs = [...lines];
      theirs[3] = 'attempt three';
      theirs[30] = 'attempt thirty';
      assert.equal(readFileSync(out.conflicts[0]!.theirs, 'utf8'), text(theirs), "the other side is the attempt's file");
      assert.equal(readFileSync(join(s.dir, 'new.txt'), 'utf8'), 'new\n', 'the clean files are applied');
      assert.match(out.files.find((f) => f.path === 'a.txt')!.reason ?? '', /your lines are kept there/);
      restoreCheckout(readRecord(join(s.state.dir, 'run-x'), out.undo!.id)!);
      assert.equal(readFileSync(join(s.dir, 'a.txt')).equals(before), true);
      assert.equal(git(s.dir, 'status', '--porcelain').trim(), 'M a.txt', 'undo removes the new file');
    } finally {
      s.cleanupAll();
    }
  });

  it('a part that conflicts: the side merged in is what the chosen hunks make of the base, not the whole attempt', async () => {
    const s = setup();
    try {
      const mine = [...lines];
      mine[3] = 'my three';
      writeFileSync(join(s.dir, 'a.txt'), text(mine));
      const [a] = listPatchFiles(s.patch);
      const part = selectFromPatch(s.patch, { hunks: [a!.hunks[0]!.id] });
      const out = await applyIntoCheckout({ ...(await s.req(part.patch)), conflicts: 'yours' });
      assert.deepEqual([out.applied, out.mode], [true, 'conflicts']);
      const theirs = [...lines];
      theirs[3] = 'attempt three';
      assert.equal(readFileSync(out.conflicts[0]!.theirs, 'utf8'), text(theirs), 'the hunk left out is not offered in the merge editor');
      assert.equal(readFileSync(join(s.dir, 'a.txt'), 'utf8'), text(mine), 'the only hunk chosen conflicts: your lines stay');
    } finally {
      s.cleanupAll();
    }
  });

  it('a new file that is already there is not merged: nothing is written', async () => {
    const s = setup();
    try {
      const mine = [...lines];
      mine[3] = 'my three';
      writeFileSync(join(s.dir, 'a.txt'), text(mine));
      writeFileSync(join(s.dir, 'new.txt'), 'mine\n');
      const out = await applyIntoCheckout(await s.req(s.patch));
      assert.equal(out.applied, false);
      assert.match(out.files.find((f) => f.path === 'new.txt')!.reason!, /new file cannot be merged/);
      assert.equal(readFileSync(join(s.dir, 'a.txt'), 'utf8'), text(mine));
      assert.equal(readFileSync(join(s.dir, 'new.txt'), 'utf8'), 'mine\n');
    } finally {
      s.cleanupAll();
    }
  });

  it('a directory swapped for a symbolic link out of the checkout is neither applied nor merged through', async () => {
    const r = makeRepo({ 'keep.txt': 'k\n' });
    const outside = scratchDir('forge-outside-');
    try {
      mkdirSync(join(r.dir, 'sub'));
      writeFileSync(join(r.dir, 'sub', 'f.txt'), text(lines));
      git(r.dir, 'add', '-A');
      git(r.dir, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '-m', 'sub');
      const base = git(r.dir, 'rev-parse', 'HEAD').trim();
      const changed = [...lines];
      changed[3] = 'attempt three';
      writeFileSync(join(r.dir, 'sub', 'f.txt'), text(changed));
      const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--binary'], { cwd: r.dir });
      const theirsTree = await attemptTree(r.dir, base, patch);
      // The user's sub/ is now a link to a directory elsewhere holding an edited f.txt.
      rmSync(join(r.dir, 'sub'), { recursive: true });
      const mine = [...lines];
      mine[3] = 'elsewhere three';
      writeFileSync(join(outside.dir, 'f.txt'), text(mine));
      symlinkSync(outside.dir, join(r.dir, 'sub'));
      await assert.rejects(
        applyIntoCheckout({
          repo: r.dir,
          runId: 'run-y',
          attempt: 0,
          baseCommit: base,
          theirsTree,
          patch,
          undoRoot: join(outside.dir, 'undo'),
          merge: true,
        }),
        /symbolic link/,
      );
      assert.equal(readFileSync(join(outside.dir, 'f.txt'), 'utf8'), text(mine), 'the file behind the link is untouched');
    } finally {
      r.cleanup();
      outside.cleanup();
    }
  });

  it('a clean file whose name is a glob (a[1].txt, b*.txt) is written beside a merged one, not skipped', async () => {
    const r = makeRepo({ 'a.txt': text(lines), 'a[1].txt': 'one\n', 'b*.txt': 'star\n', 'a1.txt': 'plain\n' });
    const state = scratchDir('forge-undo-');
    try {
      const base = git(r.dir, 'rev-parse', 'HEAD').trim();
      const changed = [...lines];
      changed[3] = 'attempt three';
      writeFileSync(join(r.dir, 'a.txt'), text(changed));
      writeFileSync(join(r.dir, 'a[1].txt'), 'ONE\n');
      writeFileSync(join(r.dir, 'b*.txt'), 'STAR\n');
      const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--binary'], { cwd: r.dir });
      git(r.dir, 'checkout', '-q', '--', '.');
      const mine = [...lines];
      mine[3] = 'my three';
      writeFileSync(join(r.dir, 'a.txt'), text(mine));
      const out = await applyIntoCheckout({
        repo: r.dir,
        runId: 'run-g',
        attempt: 0,
        baseCommit: base,
        theirsTree: await attemptTree(r.dir, base, patch),
        patch,
        undoRoot: join(state.dir, 'run-g'),
        merge: true,
      });
      assert.equal(out.mode, 'conflicts');
      assert.equal(readFileSync(join(r.dir, 'a[1].txt'), 'utf8'), 'ONE\n');
      assert.equal(readFileSync(join(r.dir, 'b*.txt'), 'utf8'), 'STAR\n');
      assert.equal(readFileSync(join(r.dir, 'a1.txt'), 'utf8'), 'plain\n');
    } finally {
      r.cleanup();
      state.cleanup();
    }
  });
});
