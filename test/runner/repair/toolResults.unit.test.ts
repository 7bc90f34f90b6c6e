import assert from 'node:assert/strict';
import { describeCell } from '../../../runner/src/repair/agentLoop.js';
import type { CellResult } from '../../../runner/src/protocol/cellResult.js';

describe('what the model reads of a cell (issue 27: escape codes)', () => {
  it('is plain text: colour and cursor codes are gone, the words stay', () => {
    const output =
      ' \x1b[31m❯\x1b[39m test/a.test.ts \x1b[2m(\x1b[22m2 tests | \x1b[31m1 failed\x1b[39m\x1b[2m)\x1b[22m\r\n   \x1b[32m✓\x1b[39m adds\x1b[K\n';
    const told = describeCell({ output, exit_code: 1, killed_by: null } as unknown as CellResult);
    assert.equal(told, 'exit code 1\n ❯ test/a.test.ts (2 tests | 1 failed)\n   ✓ adds\n');
    assert.ok(!told.includes('\x1b'));
  });
});
