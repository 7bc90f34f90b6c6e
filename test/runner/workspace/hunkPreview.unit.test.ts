import assert from 'node:assert/strict';
import { FIRST_CHANGE_MAX, listPatchFiles } from '../../../runner/src/workspace/patchHunks.js';

/** review/hunks lists, per hunk, where it ends and its first changed line: what the picker previews (issue 31). */
describe('patch listing: a hunk names its first changed line', () => {
  const patch = [
    'diff --git a/calc.py b/calc.py',
    'index 1111111..2222222 100644',
    '--- a/calc.py',
    '+++ b/calc.py',
    '@@ -1,3 +1,3 @@ def average(values):',
    ' def average(values):',
    '-    return sum(values) / (len(values) + 1)',
    '+    return sum(values) / len(values)',
    ' # end',
    '@@ -10,2 +10,3 @@',
    ' a',
    ` b`,
    `+${'é'.repeat(300)}`,
    '',
  ].join('\n');

  it('the first "+" or "-" line with its sign, UTF-8, bounded; the new side count', () => {
    const [f] = listPatchFiles(Buffer.from(patch, 'utf8'));
    assert.deepEqual(
      f!.hunks.map((h) => [h.newStart, h.newCount, h.firstChange?.slice(0, 20)]),
      [
        [1, 3, '-    return sum(valu'],
        [10, 3, `+${'é'.repeat(19)}`],
      ],
    );
    assert.equal(f!.hunks[1]!.firstChange!.length, FIRST_CHANGE_MAX);
  });
});
