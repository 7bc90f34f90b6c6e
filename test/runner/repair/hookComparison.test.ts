import assert from 'node:assert/strict';
import { differentHookFailure } from '../../../runner/src/repair/verdicts/hookComparison.js';

describe('npm hooks: the attempt prints what the base commit printed (pure; red team rounds 5 and 6)', () => {
  it('the same failure, times and durations aside, is the same', () => {
    const base =
      'npm warn audit request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\nnpm ERR! A complete log of this run can be found in: /tmp/forge-home/.npm/_logs/2026-12-01T22_30_11_123Z-debug-0.log\n# duration_ms 12.5';
    const again = base.replace('22_30_11_123Z', '22_31_40_007Z').replace('12.5', '13.9');
    assert.equal(differentHookFailure(again, base), null);
  });

  it('a subtest failing that passes on the base, a count that grew, a line without any error word: each differs', () => {
    const base = [
      'not ok 1 - release checks',
      '    not ok 1 - registry # getaddrinfo EAI_AGAIN',
      '    not ok 2 - several words',
      '    ok 3 - keep their dots',
      '# fail 2',
    ].join('\n');
    const swapped = base
      .replace('not ok 2 - several words', 'ok 2 - several words')
      .replace('ok 3 - keep their dots', 'not ok 3 - keep their dots');
    assert.match(differentHookFailure(swapped, base) ?? '', /prints what the base commit's does not/);
    const plainScript = 'README "a b": got "a-b"\nError: 2 of 4 release checks did not pass';
    assert.notEqual(differentHookFailure(plainScript.replace('2 of 4', '3 of 4'), plainScript), null);
    assert.notEqual(differentHookFailure(`README "v1.2": got "v1-2"\n${plainScript}`, plainScript), null);
  });
});
