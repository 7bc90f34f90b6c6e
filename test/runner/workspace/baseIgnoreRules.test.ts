import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { rebase, translateIgnoreRules } from '../../../runner/src/workspace/baseIgnoreRules.js';

/** What git itself lists as untracked, reading .gitignore files from the tree, vs our one exclude file. */
function compareWithGit(files: string[], ignores: Record<string, string>): { git: string[]; ours: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'forge-ignore-'));
  try {
    execFileSync('git', ['init', '-q', dir]);
    for (const f of files) {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      writeFileSync(join(dir, f), 'x');
    }
    for (const [d, text] of Object.entries(ignores)) {
      mkdirSync(join(dir, d), { recursive: true });
      writeFileSync(join(dir, d, '.gitignore'), text);
    }
    const ls = (args: string[]) =>
      execFileSync('git', ['-c', 'core.excludesFile=/dev/null', 'ls-files', '-z', '--others', ...args], { cwd: dir, encoding: 'utf8' })
        .split('\0')
        .filter(Boolean)
        .sort();
    const git = ls(['--exclude-standard']);
    const rules = translateIgnoreRules(Object.entries(ignores).map(([d, text]) => ({ dir: d, text })));
    writeFileSync(join(dir, '.git', 'forge-exclude'), rules);
    const ours = ls([`--exclude-from=${join(dir, '.git', 'forge-exclude')}`]);
    return { git, ours };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('base ignore rules (per-directory .gitignore files as one exclude file)', () => {
  it("rebases patterns of a subdirectory with git's anchoring rules", () => {
    assert.equal(rebase('*.o', 'a/b'), '/a/b/**/*.o');
    assert.equal(rebase('build/', 'a'), '/a/**/build/');
    assert.equal(rebase('/top.txt', 'a'), '/a/top.txt');
    assert.equal(rebase('x/y', 'a'), '/a/x/y');
    assert.equal(rebase('!keep.o', 'a'), '!/a/**/keep.o');
    assert.equal(rebase('*.o', 'we[ir]d*'), '/we\\[ir\\]d\\*/**/*.o');
  });

  it('keeps info/exclude first (lowest precedence) and deeper files after shallower ones', () => {
    const rules = translateIgnoreRules(
      [
        { dir: 'a/b', text: '!x\n' },
        { dir: '', text: '# c\n\nx\n' },
        { dir: 'a', text: 'y\n' },
      ],
      '/.forge/\n',
    );
    assert.equal(rules, '/.forge/\nx\n/a/**/y\n!/a/b/**/x\n');
  });

  it('lists the same untracked files as git reading the .gitignore files itself', () => {
    const cases: [string[], Record<string, string>][] = [
      [['a.o', 'src/b.o', 'src/c.c', 'src/deep/d.o', 'lib/e.o'], { src: '*.o\n!deep/*.o\n' }],
      [['build/x', 'src/build/y', 'src/keep', 'top'], { '': 'build/\n', src: '/keep\n' }],
      [['a/b/c.log', 'a/c.log', 'c.log', 'a/b/keep.log'], { a: '*.log\n', 'a/b': '!keep.log\n' }],
      [['x/y/z', 'x/z', 'z'], { x: 'y/z\n' }],
      [['n/m/t.tmp', 'n/t.tmp'], { n: '**/t.tmp\n' }],
    ];
    for (const [files, ignores] of cases) {
      const { git, ours } = compareWithGit(files, ignores);
      assert.deepEqual(ours, git, JSON.stringify(ignores));
    }
  });

  it('agrees with git on random trees and patterns', () => {
    const seg = fc.constantFrom('a', 'b', 'c', 'd.o', 'e.log');
    const path = fc.array(seg, { minLength: 1, maxLength: 4 }).map((p) => p.join('/'));
    const pattern = fc
      .tuple(fc.boolean(), fc.boolean(), fc.constantFrom('*.o', 'a', 'b/', 'c', '*.log', 'a/c', '**/d.o', 'b/*', 'e.log', '*'))
      .map(([neg, anchored, p]) => `${neg ? '!' : ''}${anchored ? '/' : ''}${p}`);
    const dirs = fc.constantFrom('', 'a', 'b', 'a/b', 'c');
    fc.assert(
      fc.property(
        fc.uniqueArray(path, { minLength: 1, maxLength: 12 }),
        fc.dictionary(
          dirs,
          fc.array(pattern, { minLength: 1, maxLength: 4 }).map((ps) => ps.join('\n') + '\n'),
          { maxKeys: 3 },
        ),
        (files, ignores) => {
          // A path cannot be both a file and a directory.
          const clean = files.filter(
            (f) => !files.some((g) => g.startsWith(f + '/')) && !Object.keys(ignores).some((d) => d === f || d.startsWith(f + '/')),
          );
          const { git, ours } = compareWithGit(clean, ignores);
          assert.deepEqual(ours, git);
        },
      ),
      { numRuns: process.env.CI === 'true' ? 40 : 100 },
    );
  });
});
