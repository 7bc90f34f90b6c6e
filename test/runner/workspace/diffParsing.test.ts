import assert from 'node:assert/strict';
import { parseBinaryPaths, parseNameStatus } from '../../../runner/src/workspace/captureWorktreeDiff.js';

describe('git diff output parsers', () => {
  it('parses -z name-status, renames naming the new path', () => {
    assert.deepEqual(parseNameStatus('M\0a.txt\0R100\0old name.txt\0new name.txt\0A\0x\ny\0D\0gone\0'), [
      { path: 'a.txt', status: 'modified' },
      { path: 'new name.txt', status: 'renamed' },
      { path: 'x\ny', status: 'added' },
      { path: 'gone', status: 'deleted' },
    ]);
  });

  it('finds binary paths in -z numstat, including renamed binaries', () => {
    const out = '1\t0\ta.txt\0-\t-\timg.bin\0-\t-\t\0old.bin\0new.bin\0';
    assert.deepEqual([...parseBinaryPaths(out)], ['img.bin', 'new.bin']);
  });
});
