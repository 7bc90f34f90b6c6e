import assert from 'node:assert/strict';
import { differentHookFailure } from '../../../runner/src/repair/verdicts/hookComparison.js';

const tap = (lines: string[]) => ['TAP version 13', ...lines, `1..${lines.length}`].join('\n');

describe('npm hooks: the same failure on the attempt as on the base commit (pure; red team round 5)', () => {
  it('a hook reporting checks: the attempt may fail only what fails on the base', () => {
    const base = tap([
      'ok 1 - trims surrounding blanks (e2e)',
      'not ok 2 - staging health # getaddrinfo EAI_AGAIN staging.api.example.com',
    ]);
    const same = tap([
      'ok 1 - trims surrounding blanks (e2e)',
      'not ok 2 - staging health # getaddrinfo EAI_AGAIN staging.api.example.com',
    ]);
    const broke = tap([
      'not ok 1 - trims surrounding blanks (e2e)',
      'not ok 2 - staging health # getaddrinfo EAI_AGAIN staging.api.example.com',
    ]);
    assert.equal(differentHookFailure(same, base), null);
    assert.match(differentHookFailure(broke, base) ?? '', /fails trims surrounding blanks \(e2e\), which the base commit's does not/);
  });

  it('a hook that names no checks (npm audit): every error line must be one the base printed, numbers aside', () => {
    const base =
      'npm warn audit request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\nnpm ERR! code 12';
    assert.equal(differentHookFailure(base.replace('12', '34'), base), null);
    assert.match(differentHookFailure(`${base}\nError: assertion failed: slug`, base) ?? '', /says what the base commit's does not/);
  });
});
