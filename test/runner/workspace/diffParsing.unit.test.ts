import assert from 'node:assert/strict';
import { parseCatFileBatch, parseRawNumstat } from '../../../runner/src/workspace/captureWorktreeDiff.js';

describe('git diff output parsers', () => {
  it('parses -z raw + numstat: statuses, renames naming the new path, binary files', () => {
    const raw = [
      ':100644 100644 aaa bbb M',
      'a.txt',
      ':100644 100644 ccc ccc R100',
      'old name.txt',
      'new name.txt',
      ':000000 100644 000 ddd A',
      'x\ny',
      ':100644 000000 eee 000 D',
      'gone',
      ':000000 100644 000 fff A',
      'img.bin',
      ':100644 100644 ggg ggg R090',
      'old.bin',
      'new.bin',
    ];
    const numstat = [
      '1\t0\ta.txt',
      '0\t0\t',
      'old name.txt',
      'new name.txt',
      '1\t0\tx\ny',
      '0\t1\tgone',
      '-\t-\timg.bin',
      '-\t-\t',
      'old.bin',
      'new.bin',
    ];
    assert.deepEqual(parseRawNumstat([...raw, ...numstat].join('\0') + '\0'), [
      { path: 'a.txt', status: 'modified', binary: false },
      { path: 'new name.txt', status: 'renamed', binary: false },
      { path: 'x\ny', status: 'added', binary: false },
      { path: 'gone', status: 'deleted', binary: false },
      { path: 'img.bin', status: 'added', binary: true },
      { path: 'new.bin', status: 'renamed', binary: true },
    ]);
  });

  it('parses cat-file --batch output, missing objects as empty', () => {
    const out = Buffer.from('s1 blob 3\nab\n\ns2 missing\ns3 blob 0\n\n');
    assert.deepEqual(parseCatFileBatch(out), ['ab\n', '', '']);
  });
});
