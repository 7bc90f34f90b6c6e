import assert from 'node:assert/strict';
import { manifestWithBaseTests, testFileRole } from '../../../runner/src/repair/verdicts/testInfrastructure.js';

describe('which changed files decide what the tests are (an attempt is judged by the base commit’s)', () => {
  it('tests, their fixtures and the test runners’ configuration are; the code under test is not', () => {
    for (const p of [
      'test/shout.test.js',
      'tests/conftest.py',
      'conftest.py',
      'src/__tests__/a.ts',
      'pkg/x_test.go',
      'testdata/in.txt',
      'src/a.spec.ts',
      'test.js',
      'tests/unit/test_calc.py',
      '.mocharc.json',
      'vitest.config.mjs',
      'packages/a/vite.config.ts',
      'jest.config.js',
      'pytest.ini',
      'pyproject.toml',
      'setup.cfg',
      'Makefile',
      'src/test/java/x/ATest.java',
      '.npmrc',
    ])
      assert.equal(testFileRole(p), 'test', p);
    for (const p of ['lib.js', 'src/index.ts', 'calc.py', 'attest.js', 'src/testing.js', 'contest.py', 'README.md'])
      assert.equal(testFileRole(p), null, p);
    assert.equal(testFileRole('package.json'), 'manifest');
    assert.equal(testFileRole('packages/a/package.json'), 'manifest');
  });

  it('a package.json keeps the attempt’s dependencies and takes the base’s scripts, workspaces and test runner config', () => {
    const base = JSON.stringify({ name: 'x', scripts: { test: 'mocha' }, dependencies: { a: '1' }, mocha: { spec: 'test' } });
    const attempt = JSON.stringify({ name: 'x', scripts: { test: 'mocha test/one.js', lint: 'x' }, dependencies: { a: '1', b: '2' } });
    const merged = JSON.parse(manifestWithBaseTests(base, attempt)!) as Record<string, unknown>;
    assert.deepEqual(merged, { name: 'x', scripts: { test: 'mocha' }, dependencies: { a: '1', b: '2' }, mocha: { spec: 'test' } });
    const same = JSON.stringify({ name: 'x', scripts: { test: 'mocha' }, dependencies: { b: '3' }, mocha: { spec: 'test' } });
    assert.equal(manifestWithBaseTests(base, same), same, 'no test key changed: the attempt’s own file');
    assert.equal(manifestWithBaseTests(base, '{ not json'), null);
  });
});
