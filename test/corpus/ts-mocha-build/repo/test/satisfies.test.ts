import { strict as assert } from 'assert';
import { compare, parse, satisfies } from '../src/index';

describe('parse and compare', () => {
  it('reads major.minor.patch with an optional v', () => {
    assert.deepEqual(parse('v1.20.3'), { major: 1, minor: 20, patch: 3 });
  });
  it('orders versions numerically, not as text', () => {
    assert.ok(compare(parse('1.10.0'), parse('1.9.9')) > 0);
  });
});

describe('satisfies', () => {
  it('caret allows minor and patch updates', () => {
    assert.equal(satisfies('1.9.0', '^1.2.3'), true);
    assert.equal(satisfies('2.0.0', '^1.2.3'), false);
  });
  it('caret below 1.0.0 allows only patch updates', () => {
    assert.equal(satisfies('0.2.9', '^0.2.3'), true);
    assert.equal(satisfies('0.3.0', '^0.2.3'), false);
  });
  it('tilde allows patch updates', () => {
    assert.equal(satisfies('1.2.9', '~1.2.3'), true);
  });
  it('tilde excludes the next minor', () => {
    assert.equal(satisfies('1.3.0', '~1.2.3'), false);
  });
  it('an exact version matches only itself', () => {
    assert.equal(satisfies('1.2.3', '1.2.3'), true);
    assert.equal(satisfies('1.2.4', '1.2.3'), false);
  });
});
