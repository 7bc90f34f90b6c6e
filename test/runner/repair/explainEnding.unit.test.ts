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

  it('escapes what a terminal would obey: an OSC clipboard write, a private CSI, C1 codes', () => {
    const ending = outputEnding('FAIL\x1b]52;c;ZXZpbA==\x07 \x1b[?1049h \x9b2J done');
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(ending, /[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    assert.match(ending, /\\x1b\]52;c;ZXZpbA==\\x07 \\x1b\[\?1049h \\x9b2J done/);
  });
});
