import assert from 'node:assert/strict';
import { reportsCachedTestResult } from '../../../runner/src/repair/fix/baselineCaches.js';

describe('a go test result taken from the build cache is seen', () => {
  it('in plain and -v output, and inside -json Output strings; a package that ran is not', () => {
    assert.ok(reportsCachedTestResult('=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\nok  \texample.com/c8\t(cached)\n'));
    assert.ok(reportsCachedTestResult('{"Action":"output","Package":"x","Output":"ok  \\tx\\t(cached)\\n"}\n'));
    assert.ok(!reportsCachedTestResult('ok  \texample.com/c8\t0.004s\nFAIL\texample.com/d\t0.002s\n'));
    assert.ok(!reportsCachedTestResult('--- FAIL: TestCached (0.00s)\n    a_test.go:9: ok x (cached) in a message\n'));
  });
});
