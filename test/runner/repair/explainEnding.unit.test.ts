import assert from 'node:assert/strict';
import { outputEnding } from '../../../runner/src/repair/explainEnding.js';

describe('outputEnding: what a red cell printed last, on one line', () => {
  it('quotes the last non-empty lines, colour codes and carriage returns gone', () => {
    const out = 'ok  \tpkg/a\t0.1s\n\n\x1b[31m# pkg/b\x1b[0m\r\n./b.go:3:1: syntax error\nFAIL\tpkg/b [build failed]\n\n';
    assert.equal(outputEnding(out), '"# pkg/b | ./b.go:3:1: syntax error | FAIL\tpkg/b [build failed]"');
  });

  it('bounds a long ending to its last characters and says when there was nothing', () => {
    const ending = outputEnding(`${'x'.repeat(5000)}\n`, 3, 100);
    assert.equal(ending, `"...${'x'.repeat(100)}"`);
    assert.equal(outputEnding('\n \n'), '(no output)');
  });
});
