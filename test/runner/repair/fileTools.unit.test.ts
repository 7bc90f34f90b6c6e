import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { editFile, listFiles, readFile, searchFiles, writeFile } from '../../../runner/src/repair/tools/fileTools.js';
import { ToolError } from '../../../runner/src/repair/tools/toolError.js';
import { WorktreeFiles } from '../../../runner/src/repair/tools/worktreeFiles.js';
import { scratchDir } from '../../helpers/gitRepo.js';

describe('agent file tools', () => {
  let wt: ReturnType<typeof scratchDir>;
  let outside: ReturnType<typeof scratchDir>;
  beforeEach(() => {
    wt = scratchDir('forge-tools-wt-');
    outside = scratchDir('forge-tools-outside-');
    writeFileSync(join(wt.dir, 'calc.py'), 'def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n');
    mkdirSync(join(wt.dir, '.git'));
    writeFileSync(join(outside.dir, 'secret'), 'TOP SECRET\n');
  });
  afterEach(() => {
    wt.cleanup();
    outside.cleanup();
  });

  it('refuses paths that leave the worktree, with a message for the model', () => {
    const refused = [
      '../../etc/passwd',
      '/etc/passwd',
      join(outside.dir, 'secret'),
      'a/../../x',
      '',
      '.git/config',
      'sub/.git/hooks/x',
      'x\0y',
    ];
    for (const p of refused)
      assert.throws(() => new WorktreeFiles(wt.dir).resolve(p, { followFinal: true, createDirs: false }), ToolError, p);
    assert.throws(() => readFile(wt.dir, { path: '../../etc/passwd' }), /outside the repository/);
    assert.throws(() => writeFile(wt.dir, { path: '/tmp/forge-evil', content: 'x' }), /outside the repository/);
    assert.throws(() => new WorktreeFiles(wt.dir).read(42, 10), /non-empty string/);
  });

  it('refuses symlinks that lead out, for reading and for writing through them', () => {
    symlinkSync(outside.dir, join(wt.dir, 'escape'));
    symlinkSync(join(outside.dir, 'secret'), join(wt.dir, 'secret-link'));
    assert.throws(() => readFile(wt.dir, { path: 'escape/secret' }), /symbolic link/);
    assert.throws(() => readFile(wt.dir, { path: 'secret-link' }), /symbolic link/);
    assert.throws(() => writeFile(wt.dir, { path: 'escape/planted', content: 'x' }), /symbolic link/);
    assert.equal(readFileSync(join(outside.dir, 'secret'), 'utf8'), 'TOP SECRET\n');
  });

  it('accepts absolute paths inside the worktree', () => {
    assert.match(readFile(wt.dir, { path: join(wt.dir, 'calc.py'), start_line: 1, end_line: 1 }), /^1: def add/);
  });

  it('edit_file needs old_string to match exactly once', () => {
    assert.throws(() => editFile(wt.dir, { path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' }), /more than once/);
    assert.throws(() => editFile(wt.dir, { path: 'calc.py', old_string: 'nope', new_string: 'x' }), /not found/);
    editFile(wt.dir, { path: 'calc.py', old_string: 'def add(a, b):\n    return a - b', new_string: 'def add(a, b):\n    return a + b' });
    assert.match(readFileSync(join(wt.dir, 'calc.py'), 'utf8'), /return a \+ b\n\ndef sub/);
  });

  it('read_file numbers lines and pages; list_files hides .git; search finds text', () => {
    assert.equal(
      readFile(wt.dir, { path: 'calc.py', start_line: 2, end_line: 2 }),
      '2:     return a - b\n[... lines 3-6 not shown; pass start_line]',
    );
    assert.equal(listFiles(wt.dir, {}), 'calc.py');
    assert.equal(searchFiles(wt.dir, { pattern: 'def sub' }), 'calc.py:4: def sub(a, b):');
    writeFile(wt.dir, { path: 'pkg/new.py', content: 'x = 1\n' });
    assert.equal(listFiles(wt.dir, { path: 'pkg' }), 'new.py');
    writeFileSync(join(wt.dir, 'blob.bin'), Buffer.from([1, 0, 2]));
    assert.throws(() => readFile(wt.dir, { path: 'blob.bin' }), /binary/);
  });
});
