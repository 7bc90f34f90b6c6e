// A cache a tool marks as its own (pytest's .pytest_cache) is left out of the patch; every
// other use of the same markers is a cell trying to hide a change from review, and must not.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { captureApplicablePatch, captureWorktreeDiff } from '../../runner/src/workspace/captureWorktreeDiff.js';
import { patchStructure } from '../../runner/src/workspace/patchBytes.js';
import { git, makeRepo, worktreeSource } from '../helpers/gitRepo.js';

const TAG = 'Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by pytest.\n';

function write(dir: string, rel: string, content: string): void {
  mkdirSync(join(dir, rel, '..'), { recursive: true });
  writeFileSync(join(dir, rel), content);
}

describe('generated caches are not the change; the markers hide nothing else', () => {
  it("pytest's cache (a .gitignore of * and a CACHEDIR.TAG in a new directory) is named as generated, not patched", async () => {
    const repo = makeRepo({ 'calc.py': 'def add(a, b):\n    return a - b\n' });
    try {
      write(repo.dir, 'calc.py', 'def add(a, b):\n    return a + b\n');
      write(repo.dir, '.pytest_cache/.gitignore', '# Created by pytest automatically.\n*\n');
      write(repo.dir, '.pytest_cache/CACHEDIR.TAG', TAG);
      write(repo.dir, '.pytest_cache/v/cache/lastfailed', '{}\n');
      write(repo.dir, '.pytest_cache/README.md', '# pytest cache directory #\n');
      // A tool that only writes the tag (cargo's target/, others).
      write(repo.dir, 'sub/build-cache/CACHEDIR.TAG', TAG);
      write(repo.dir, 'sub/build-cache/obj/x.o', 'obj');
      const src = await worktreeSource(repo.dir);
      const patch = await captureApplicablePatch(src);
      assert.deepEqual(patch.paths, ['calc.py']);
      assert.deepEqual(
        patch.generated,
        ['sub/build-cache/', '.pytest_cache/'].sort((a, b) => a.length - b.length),
      );
      assert.deepEqual(patch.omitted, []);
      const review = await captureWorktreeDiff(src);
      assert.deepEqual(
        review.files.map((f) => f.path),
        ['calc.py'],
      );
      assert.deepEqual([...(review.generated ?? [])].sort(), ['.pytest_cache/', 'sub/build-cache/']);
    } finally {
      repo.cleanup();
    }
  });

  it('a marker in a directory the base tracks hides nothing (new code beside the user`s code stays in the patch)', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      write(repo.dir, 'src/calc.py', 'x = 1\n');
      git(repo.dir, 'add', '-A');
      git(repo.dir, 'commit', '-q', '-m', 'src');
      write(repo.dir, 'src/.gitignore', '*\n');
      write(repo.dir, 'src/CACHEDIR.TAG', TAG);
      write(repo.dir, 'src/evil.py', 'import os\n');
      const patch = await captureApplicablePatch(await worktreeSource(repo.dir));
      assert.deepEqual(patch.generated, []);
      assert.deepEqual([...patch.paths].sort(), ['src/.gitignore', 'src/CACHEDIR.TAG', 'src/evil.py']);
    } finally {
      repo.cleanup();
    }
  });

  it('a marker at the top, a tag without the signature, a marker that is a link, an ignore file with more rules: all hide nothing', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      write(repo.dir, '.gitignore', '*\n');
      write(repo.dir, 'fake/CACHEDIR.TAG', 'not a cache\n');
      write(repo.dir, 'fake/code.py', 'x\n');
      write(repo.dir, 'narrow/.gitignore', '*\n!keep.py\n');
      write(repo.dir, 'narrow/keep.py', 'y\n');
      write(repo.dir, 'linked/real-tag', TAG);
      symlinkSync('real-tag', join(repo.dir, 'linked/CACHEDIR.TAG'));
      write(repo.dir, 'linked/code.py', 'z\n');
      symlinkSync('/etc/passwd', join(repo.dir, 'link-out'));
      mkdirSync(join(repo.dir, 'outward'));
      symlinkSync('/tmp', join(repo.dir, 'outward/.gitignore'));
      write(repo.dir, 'outward/code.py', 'w\n');
      const patch = await captureApplicablePatch(await worktreeSource(repo.dir));
      assert.deepEqual(patch.generated, []);
      const paths = new Set(patch.paths);
      for (const p of ['.gitignore', 'fake/code.py', 'narrow/keep.py', 'linked/code.py', 'linked/CACHEDIR.TAG', 'outward/code.py'])
        assert.ok(paths.has(p), `${p} was hidden: ${[...paths].join(', ')}`);
      assert.match(patchStructure(patch.patch), /fake\/code\.py/);
    } finally {
      repo.cleanup();
    }
  });
});
