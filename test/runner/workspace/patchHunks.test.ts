import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { listPatchFiles, selectFromPatch } from '../../../runner/src/workspace/patchHunks.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';

/**
 * Hunk split and select against real git: every hunk chosen rebuilds the patch byte for byte,
 * and any subset is a patch `git apply --check` takes on the base, changing only what it holds.
 */
describe('patch hunks: split, select and apply with git', () => {
  const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i}`);
  // A file of 60 lines and edits far enough apart to make several hunks.
  const edit = fc.record({
    at: fc.integer({ min: 0, max: 59 }),
    kind: fc.constantFrom('change', 'insert', 'delete'),
    text: fc.string({ maxLength: 12 }),
  });
  const fileEdits = fc.array(edit, { minLength: 1, maxLength: 6 });

  function applyEdits(base: string[], edits: { at: number; kind: string; text: string }[]): string[] {
    const out = [...base];
    // From the bottom up, so earlier positions stay put.
    for (const e of [...edits].sort((a, b) => b.at - a.at)) {
      const text = `edit ${e.text.replace(/[\r\n]/g, ' ')}`;
      if (e.kind === 'change') out[e.at] = text;
      else if (e.kind === 'insert') out.splice(e.at, 0, text);
      else out.splice(e.at, 1);
    }
    return out;
  }

  it('all hunks rebuild the patch exactly; any subset applies on the base and changes only its hunks', async () => {
    await fc.assert(
      fc.asyncProperty(fileEdits, fileEdits, fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }), async (e1, e2, picks) => {
        const baseA = lines(60, 'a');
        const baseB = lines(60, 'b');
        const r = makeRepo({ 'a.txt': baseA.join('\n') + '\n', 'b.txt': baseB.join('\n') + '\n' });
        try {
          writeFileSync(join(r.dir, 'a.txt'), applyEdits(baseA, e1).join('\n') + '\n');
          writeFileSync(join(r.dir, 'b.txt'), applyEdits(baseB, e2).join('\n') + '\n');
          const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--binary'], { cwd: r.dir });
          git(r.dir, 'checkout', '-q', '--', '.');
          if (patch.length === 0) return;
          const files = listPatchFiles(patch);
          const all = files.flatMap((f) => f.hunks.map((h) => h.id));
          const full = selectFromPatch(patch, { hunks: all });
          assert.ok(full.patch.equals(patch), 'every hunk chosen is the original patch');
          assert.equal(full.complete, true);
          const subset = all.filter((_, i) => picks[i % picks.length]);
          const part = selectFromPatch(patch, { hunks: subset });
          assert.equal(part.leftOut.length, all.length - subset.length);
          if (subset.length === 0) return;
          const pfile = join(r.dir, '.git', 'part.patch');
          writeFileSync(pfile, part.patch);
          git(r.dir, 'apply', '--check', '--whitespace=nowarn', pfile);
          git(r.dir, 'apply', '--whitespace=nowarn', pfile);
          // What the subset wrote is what its hunks say: the diff of the result lists exactly them.
          const again = execFileSync('git', ['-c', 'safe.directory=*', 'diff'], { cwd: r.dir });
          const after = listPatchFiles(again)
            .flatMap((f) => f.hunks.map((h) => `${f.path}:${h.added}/${h.removed}`))
            .sort();
          const chosen = files
            .flatMap((f) => f.hunks.filter((h) => subset.includes(h.id)).map((h) => `${f.path}:${h.added}/${h.removed}`))
            .sort();
          // Adjacent chosen hunks may merge into one in the new diff: compare totals per file.
          const total = (xs: string[]) => {
            const m = new Map<string, number>();
            for (const x of xs) {
              const [p, c] = x.split(':');
              const [a, d] = c!.split('/').map(Number);
              m.set(p!, (m.get(p!) ?? 0) + a! * 1000 + d!);
            }
            return [...m.entries()].sort();
          };
          assert.deepEqual(total(after), total(chosen));
        } finally {
          r.cleanup();
        }
      }),
      { numRuns: 25 },
    );
  });

  it('binary, new and deleted files go whole; unknown ids and hunks of a whole file are refused in one line', () => {
    const r = makeRepo({ 'a.txt': lines(30, 'a').join('\n') + '\n', 'gone.txt': 'x\n' });
    try {
      const a = lines(30, 'a');
      a[2] = 'changed';
      a[25] = 'changed too';
      writeFileSync(join(r.dir, 'a.txt'), a.join('\n') + '\n');
      writeFileSync(join(r.dir, 'new.bin'), Buffer.from([0, 1, 2, 255]));
      git(r.dir, 'rm', '-q', 'gone.txt');
      git(r.dir, 'add', '-A');
      const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--cached', '--binary'], { cwd: r.dir });
      const files = listPatchFiles(patch);
      assert.deepEqual(
        files.map((f) => [f.path, f.whole, f.hunks.length]),
        [
          ['a.txt', null, 2],
          ['gone.txt', 'deleted file', 1],
          ['new.bin', 'binary', 0],
        ],
      );
      assert.match(files[0]!.hunks[0]!.header, /^@@ -1,6 \+1,6 @@/);
      assert.throws(() => selectFromPatch(patch, { hunks: ['f9h9'] }), /unknown hunk id\(s\) f9h9/);
      assert.throws(() => selectFromPatch(patch, { files: ['nope.txt'] }), /unknown file id\(s\) "nope.txt"/);
      assert.throws(() => selectFromPatch(patch, { files: ['new.bin'] }), /not by path/, 'a path is no id');
      assert.throws(() => selectFromPatch(patch, { hunks: ['f1h0'] }), /gone.txt \(deleted file\) is applied whole/);
      const part = selectFromPatch(patch, { hunks: ['f0h1'], files: ['f2'] });
      assert.deepEqual(part.leftOut, [`a.txt ${files[0]!.hunks[0]!.header}`, 'gone.txt (deleted file)']);
      git(r.dir, 'reset', '-q', '--hard');
      const pfile = join(r.dir, '.git', 'part.patch');
      writeFileSync(pfile, part.patch);
      git(r.dir, 'apply', pfile);
      assert.deepEqual(readFileSync(join(r.dir, 'new.bin')), Buffer.from([0, 1, 2, 255]));
      assert.match(readFileSync(join(r.dir, 'a.txt'), 'utf8'), /changed too/);
      assert.doesNotMatch(readFileSync(join(r.dir, 'a.txt'), 'utf8'), /^changed$/m);
    } finally {
      r.cleanup();
    }
  });

  it('selection is by id only: a new file named "f2" is not confused with file f2, pytest.ini (red team 2)', () => {
    const r = makeRepo({ 'a.txt': 'a\n', 'pytest.ini': '[pytest]\n' });
    try {
      writeFileSync(join(r.dir, 'a.txt'), 'a changed\n');
      writeFileSync(join(r.dir, 'pytest.ini'), '[pytest]\naddopts = -p evil\n');
      writeFileSync(join(r.dir, 'f2'), 'new file named like an id\n');
      git(r.dir, 'add', '-A');
      const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--cached', '--binary'], { cwd: r.dir });
      assert.deepEqual(
        listPatchFiles(patch).map((f) => [f.id, f.path]),
        [
          ['f0', 'a.txt'],
          ['f1', 'f2'],
          ['f2', 'pytest.ini'],
        ],
      );
      // The user picks the new file "f2" by its id f1: pytest.ini does not come with it.
      const part = selectFromPatch(patch, { hunks: ['f0h0'], files: ['f1'] });
      assert.doesNotMatch(part.patch.toString('latin1'), /pytest\.ini/);
      assert.deepEqual(part.leftOut, ['pytest.ini @@ -1 +1,2 @@']);
      // "f2" is pytest.ini's id only, never also the file named f2.
      const byId = selectFromPatch(patch, { files: ['f2'] });
      assert.doesNotMatch(byId.patch.toString('latin1'), /b\/f2\n/);
      assert.match(byId.patch.toString('latin1'), /pytest\.ini/);
      // A path is refused even when it names a file.
      assert.throws(() => selectFromPatch(patch, { files: ['pytest.ini'] }), /unknown file id\(s\) "pytest.ini".*not by path/);
    } finally {
      r.cleanup();
    }
  });

  it('names are read as git writes them: C-quoting undone, a mode change of "x.sh b/y" is not shown as x.sh (red team 3)', () => {
    const r = makeRepo({ 'deploy.sh': 'echo hi\n', 'tab\tname.txt': 't\n', 'café.txt': 'c\n', 'ln.txt': 'l\n' });
    try {
      mkdirSync(join(r.dir, 'deploy.sh b'));
      writeFileSync(join(r.dir, 'deploy.sh b/x'), 'evil\n');
      git(r.dir, 'add', '-A');
      git(r.dir, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '-m', 'more');
      writeFileSync(join(r.dir, 'deploy.sh'), 'echo changed\n');
      git(r.dir, 'update-index', '--chmod=+x', 'deploy.sh b/x');
      writeFileSync(join(r.dir, 'tab\tname.txt'), 't2\n');
      writeFileSync(join(r.dir, 'café.txt'), 'c2\n');
      git(r.dir, 'rm', '-q', 'ln.txt');
      symlinkSync('deploy.sh', join(r.dir, 'ln.txt'));
      git(r.dir, 'add', '-A', '--', 'deploy.sh', 'tab\tname.txt', 'café.txt', 'ln.txt');
      const patch = execFileSync('git', ['-c', 'safe.directory=*', 'diff', '--cached', '--binary'], { cwd: r.dir });
      const byPath = new Map(listPatchFiles(patch).map((f) => [f.path, f]));
      assert.deepEqual([...byPath.keys()].sort(), ['café.txt', 'deploy.sh', 'deploy.sh b/x', 'ln.txt', 'tab\tname.txt'].sort());
      assert.equal(byPath.get('deploy.sh b/x')!.whole, 'mode change');
      assert.equal(byPath.get('deploy.sh')!.whole, null);
      assert.equal(byPath.get('ln.txt')!.whole, 'symbolic link');
      // Choosing deploy.sh's hunk leaves the mode change out.
      const part = selectFromPatch(patch, { hunks: [`${byPath.get('deploy.sh')!.id}h0`] });
      assert.ok(part.leftOut.includes('deploy.sh b/x (mode change)'), part.leftOut.join('; '));
    } finally {
      r.cleanup();
    }
  });
});
