import assert from 'node:assert/strict';
import fc from 'fast-check';
import { explainRanking } from '../../../runner/src/repair/explainRanking.js';
import { normalizePatch, selectWinner, type Candidate } from '../../../runner/src/repair/selectWinner.js';
import type { Verdict } from '../../../runner/src/repair/verdicts/judgeTestRun.js';
import { aVerdict } from '../../helpers/verdicts.js';

const verdict = (green: boolean, failed = green ? 0 : 1): Verdict => aVerdict(green, { failed });
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

  it('a verdict of only the baseline failing tests (failing tests first) is never closer than one the whole suite judged (red team)', () => {
    const targeted = aVerdict(false, {
      failed: 1,
      targeted: { how: 'go test -run', tests: ['TestA', 'TestB'], still_failing: ['TestA'], seconds: 1 },
    });
    const s = selectWinner([cand('a0', 0, targeted, patch(1)), cand('a1', 1, verdict(false, 3), patch(9))]);
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

describe('explainRanking', () => {
  const attempt = (index: number, v: Verdict | null, p: string) => ({ index, attemptId: `a${index}`, verdict: v, patch: Buffer.from(p) });

  it('says why attempts rank as they do, groups identical changes and names what was not ranked', () => {
    const r = explainRanking([
      attempt(0, verdict(true), patch(2)),
      attempt(1, { ...verdict(false, 2), regressions: ['t.test_a'] }, patch(1, 'y')),
      attempt(2, verdict(true), patch(2)),
      attempt(3, verdict(true), patch(5, 'z')),
      attempt(4, verdict(false), ''),
      attempt(5, null, ''),
    ]);
    assert.deepEqual(
      [...r.agreesWith].sort(([a], [b]) => a - b),
      [
        [0, [2]],
        [1, []],
        [2, [0]],
        [3, []],
      ],
    );
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5].map((i) => r.rank.get(i) ?? null),
      [1, 3, 1, 2, null, null],
    );
    assert.deepEqual(r.lines, [
      'Ranked: green first (tests pass, nothing that passed before fails), then the smaller diff, then more attempts agreeing, then attempt order.',
      'won: attempts 0, 2 (2 agree: the same change): green (3 passed), 2 lines added or removed.',
      '#2: attempt 3: green (3 passed), 5 lines added or removed.',
      '#3: attempt 1: red (2 failing, 1 regression(s)), 1 line added or removed.',
      'Not ranked: attempt 4 changed nothing.',
      'Not ranked: attempt 5 did not finish.',
    ]);
  });

  it('an attempt whose tests could not run has no place among the failing ones: it is said apart, with its cause (issue 27)', () => {
    const r = explainRanking([
      attempt(0, { ...verdict(false), could_not_run: 'WebAssembly memory could not be reserved' }, patch(1, 'c')),
      attempt(1, verdict(false, 2), patch(3, 'r')),
      attempt(2, verdict(true), patch(2)),
    ]);
    assert.deepEqual(
      [0, 1, 2].map((i) => r.rank.get(i) ?? null),
      [null, 2, 1],
    );
    assert.deepEqual(r.lines.slice(1), [
      'won: attempt 2: green (3 passed), 2 lines added or removed.',
      '#2: attempt 1: red (2 failing), 3 lines added or removed.',
      'Not ranked: attempt 0: the tests could not run (WebAssembly memory could not be reserved).',
    ]);
  });

  it('with nothing green, no line says "won"', () => {
    const r = explainRanking([attempt(0, verdict(false), patch(1)), attempt(1, verdict(false, 3), patch(2, 'q'))]);
    assert.ok(r.lines.slice(1).every((l) => l.startsWith('#')));
    assert.deepEqual(explainRanking([]).lines, []);
  });
});
