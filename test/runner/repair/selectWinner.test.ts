import assert from 'node:assert/strict';
import fc from 'fast-check';
import { normalizePatch, selectWinner, type Candidate } from '../../../runner/src/repair/selectWinner.js';
import type { Verdict } from '../../../runner/src/repair/verdicts/judgeTestRun.js';

const verdict = (green: boolean, failed = green ? 0 : 1): Verdict => ({
  exit_code: green ? 0 : 1,
  framework: 'pytest',
  passed: 3,
  failed,
  skipped: 0,
  failing: [],
  regressions: [],
  regressions_known: true,
  hook_failures: [],
  green,
});
const patch = (lines: number, tag = 'x') =>
  `diff --git a/f.py b/f.py\nindex 111..222 100644\n--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n` +
  Array.from({ length: lines }, (_, i) => `+${tag}${i}`).join('\n') +
  '\n';
const cand = (id: string, index: number, v: Verdict, p: string): Candidate => ({ attemptId: id, index, verdict: v, patch: Buffer.from(p) });

describe('selectWinner', () => {
  it('prefers green, then the smallest diff', () => {
    const s = selectWinner([
      cand('a0', 0, verdict(false), patch(1)),
      cand('a1', 1, verdict(true), patch(5)),
      cand('a2', 2, verdict(true), patch(2)),
    ]);
    assert.deepEqual(s.winner?.attempts, ['a2']);
    assert.equal(s.best, null);
  });

  it('counts identical normalized diffs as one candidate with an agreement count', () => {
    const same = patch(3, 'fix');
    const s = selectWinner([
      cand('a0', 0, verdict(true), same),
      cand('a1', 1, verdict(true), same.replace('index 111..222', 'index 333..444') + '   \n'),
      cand('a2', 2, verdict(true), patch(3, 'other')),
    ]);
    assert.deepEqual(
      s.ranked.map((g) => [g.attempts, g.agreement]),
      [
        [['a0', 'a1'], 2],
        [['a2'], 1],
      ],
    );
    assert.deepEqual(s.winner?.attempts, ['a0', 'a1']);
  });

  it('with no green attempt, names the closest one and has no winner', () => {
    const s = selectWinner([cand('a0', 0, verdict(false, 3), patch(1)), cand('a1', 1, verdict(false, 1), patch(9))]);
    assert.equal(s.winner, null);
    assert.deepEqual(s.best?.attempts, ['a1']);
  });

  it('never picks an attempt that changed nothing', () => {
    const s = selectWinner([cand('a0', 0, verdict(true), ''), cand('a1', 1, verdict(true), '\n \n')]);
    assert.equal(s.winner, null);
    assert.deepEqual(s.empty, ['a0', 'a1']);
  });

  it('always returns a green winner when one exists, and none smaller than it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ green: fc.boolean(), size: fc.integer({ min: 0, max: 6 }), tag: fc.constantFrom('a', 'b', 'c') }), {
          minLength: 1,
          maxLength: 8,
        }),
        (specs) => {
          const cands = specs.map((s, i) => cand(`a${i}`, i, verdict(s.green), s.size === 0 ? '' : patch(s.size, s.tag)));
          const sel = selectWinner(cands);
          const greens = specs.filter((s) => s.green && s.size > 0);
          if (greens.length === 0) return sel.winner === null;
          if (!sel.winner?.verdict.green) return false;
          const agreed = sel.ranked.reduce((n, g) => n + g.agreement, 0) + sel.empty.length;
          return sel.winner.size === Math.min(...greens.map((g) => g.size)) && agreed === specs.length;
        },
      ),
    );
  });

  it('normalizes line endings, blob ids and trailing blanks only', () => {
    assert.equal(normalizePatch('index 1a..2b 100644\r\n+a  \r\n'), '+a');
    assert.notEqual(normalizePatch('+a\n'), normalizePatch('+b\n'));
  });
});
