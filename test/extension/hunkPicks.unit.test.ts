import assert from 'node:assert/strict';
import { describePartOutcome, hunkPicks, selectionOf } from '../../extension/src/review/hunkPicks.js';

describe('Apply Part of Attempt: picker rows and the selection they make', () => {
  const files = [
    {
      id: 'f0',
      path: 'src/a.ts',
      whole: null,
      added: 3,
      removed: 1,
      hunks: [
        { id: 'f0h0', header: '@@ -1,3 +1,4 @@ function a', added: 2, removed: 1, old_start: 1, new_start: 1 },
        { id: 'f0h1', header: '@@ -20,3 +21,3 @@', added: 1, removed: 0, old_start: 20, new_start: 21 },
      ],
    },
    { id: 'f1', path: 'logo.png', whole: 'binary', added: 0, removed: 0, hunks: [] },
  ];

  it('a separator per file, a row per hunk, a binary file as one whole-file row', () => {
    const rows = hunkPicks(files);
    assert.deepEqual(
      rows.map((r) => (r.kind === 'file' ? `-- ${r.label}` : `${r.label} ${r.description}`)),
      ['-- src/a.ts', 'lines 1–4: +2 −1 function a', 'lines 21–23: +1 −0 ', '-- logo.png', 'whole file: binary '],
    );
    assert.deepEqual(selectionOf([rows[2]!, rows[4]!]), { files: ['f1'], hunks: ['f0h1'] });
  });

  it('a whole file is chosen by its id, never its path: a new file named "f0" does not pick file f0', () => {
    const rows = hunkPicks([files[0]!, { id: 'f1', path: 'f0', whole: 'new file', added: 1, removed: 0, hunks: [] }]);
    const whole = rows.find((r) => r.kind === 'hunk' && r.hunkId === null)!;
    assert.deepEqual(selectionOf([whole]), { files: ['f1'], hunks: [] });
  });

  it('says what a part left out and that the run stays open', () => {
    assert.match(describePartOutcome('/r', 1, ['src/a.ts @@ -1,3 +1,4 @@']), /left out 1: src\/a.ts lines 1–4\. .*stays open/);
    assert.match(describePartOutcome('/r', 2, []), /the attempt's whole change is in your checkout, so the run counts as applied/);
  });
});
