import assert from 'node:assert/strict';
import { headerContext, hunkLines, leftOutWords, hunkPicks, PREVIEW_MAX, previewLine } from '../../extension/src/review/hunkPicks.js';

/** Issue 31: each row of "Apply Part of Attempt" says what its hunk changes; the file is named once, by its separator. */
describe('Apply Part of Attempt: what a hunk row says', () => {
  const file = {
    id: 'f0',
    path: 'calc.py',
    whole: null,
    added: 2,
    removed: 1,
    hunks: [
      {
        id: 'f0h0',
        header: '@@ -3,7 +3,8 @@ def average(values):',
        added: 1,
        removed: 1,
        old_start: 3,
        new_start: 3,
        new_count: 8,
        first_change: '-    return sum(values) / (len(values) + 1)',
      },
      { id: 'f0h1', header: '@@ -40,2 +41 @@', added: 0, removed: 1, old_start: 40, new_start: 41, first_change: '-x = 1' },
    ],
  };

  it('a hunk row: its new lines and counts, the function it is in, and its first changed line; no path or raw header', () => {
    const rows = hunkPicks([file]);
    assert.deepEqual(rows[0], { kind: 'file', label: 'calc.py' });
    const h = rows[1]!;
    assert.ok(h.kind === 'hunk');
    assert.equal(h.label, 'lines 3–10: +1 −1');
    assert.equal(h.description, 'def average(values):');
    assert.equal(h.detail, '− return sum(values) / (len(values) + 1)');
    for (const r of rows.slice(1)) {
      assert.ok(r.kind === 'hunk');
      assert.doesNotMatch(`${r.label} ${r.description} ${r.detail}`, /@@|calc\.py/);
    }
    // No count in the listing (an older runner): read from the header ("+41" alone is one line).
    const second = rows[2]!;
    assert.ok(second.kind === 'hunk');
    assert.equal(second.label, 'line 41: +0 −1');
  });

  it('line ranges: one line, several, a pure removal, an unreadable header', () => {
    assert.equal(hunkLines({ header: '', new_start: 7, new_count: 1 }), 'line 7');
    assert.equal(hunkLines({ header: '', new_start: 7, new_count: 3 }), 'lines 7–9');
    assert.equal(hunkLines({ header: '@@ -7,2 +6,0 @@', new_start: 6 }), 'at line 6');
    assert.equal(hunkLines({ header: 'garbage', new_start: 6 }), 'line 6');
  });

  it('whole-file rows say why in words and count only what they change', () => {
    const rows = hunkPicks([
      { id: 'f1', path: 'logo.png', whole: 'binary', added: 0, removed: 0, hunks: [] },
      { id: 'f2', path: 'new.py', whole: 'new file', added: 4, removed: 0, hunks: [] },
    ]);
    const whole = rows.filter((r) => r.kind === 'hunk').map((r) => [r.label, r.description, r.detail]);
    assert.deepEqual(whole, [
      ['whole file: binary', '', ''],
      ['whole file: new file', '+4 −0', ''],
    ]);
  });

  it('the preview is repository text: control and bidi characters go, blanks collapse, the length is bounded', () => {
    assert.equal(previewLine('+\t  if (x)\u001b[31m {\r'), '+ if (x) [31m {');
    assert.equal(previewLine('+ evil\u202e)txt.exe'), '+ evil )txt.exe');
    assert.equal(previewLine('+'), '+ (blank line)');
    assert.equal(previewLine(null), '');
    const long = previewLine(`+${'x'.repeat(500)}`);
    assert.ok(long.length <= PREVIEW_MAX, `${long.length}`);
    assert.ok(long.endsWith('…'));
    assert.equal(headerContext('@@ -1 +1 @@ class A\u0007'), 'class A');
    assert.equal(headerContext('@@ -1 +1 @@'), '');
  });

  it('what a part left out, in the same words', () => {
    assert.equal(leftOutWords('calc.py @@ -1,6 +1,6 @@ def average(values):'), 'calc.py lines 1–6');
    assert.equal(leftOutWords('my file.py @@ -9 +9 @@'), 'my file.py line 9');
    assert.equal(leftOutWords('logo.png'), 'logo.png');
  });
});
