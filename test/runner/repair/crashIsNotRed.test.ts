import assert from 'node:assert/strict';
import { probeBubblewrap } from '../../../runner/src/cells/bubblewrapProbe.js';
import { testRunCrash } from '../../../runner/src/repair/verdicts/testRunCrash.js';
import { edit, fixWithAttempts, npmPackage } from '../../helpers/fixCli.js';
import { requireFeature } from '../../helpers/requirement.js';

const END = { exitCode: 1, timedOut: false, killedBy: null, limitsHit: [] as string[] };

describe('a crash is not a red test (issue 27)', function () {
  this.timeout(300_000);

  it('a test runner that died before any result, for want of memory, a thread or by a signal, could not run; a run that reported tests ran', () => {
    const wasm = 'RangeError: WebAssembly.instantiate(): Out of memory: Cannot allocate Wasm memory for new instance';
    assert.match(testRunCrash(END, `⎯⎯ Unhandled Rejection ⎯⎯\n${wasm}\n`, null) ?? '', /WebAssembly memory could not be reserved/);
    assert.match(
      testRunCrash(END, 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n', null) ?? '',
      /heap ran out/,
    );
    assert.match(testRunCrash({ ...END, limitsHit: ['pids'] }, '', null) ?? '', /process limit/);
    assert.match(testRunCrash({ ...END, exitCode: 139 }, 'Segmentation fault\n', null) ?? '', /SIGSEGV/);
    // An ordinary failure, a timeout, a pass, and a crash after tests reported are verdicts.
    assert.equal(testRunCrash(END, 'not ok 1 - adds\n', null), null);
    assert.equal(testRunCrash({ ...END, timedOut: true }, 'JavaScript heap out of memory', null), null);
    assert.equal(testRunCrash({ ...END, exitCode: 0 }, 'JavaScript heap out of memory', null), null);
    const reported = { framework: 'tap', passed: 3, failed: 1, skipped: 0, tests: new Map() };
    assert.equal(testRunCrash(END, 'JavaScript heap out of memory', reported), null);
  });

  describe('through the CLI on host cells', () => {
    before(async function () {
      const probe = await probeBubblewrap();
      requireFeature(this, probe.usable, probe.reason);
    });

    // The test script crashes the way a starved vitest does when crash.flag says so.
    const files = (crashOnce: boolean) => ({
      'package.json': npmPackage('calc', { test: 'node run-tests.js' }),
      '.gitignore': '.crashed-once\n',
      'calc.js': 'exports.add = (a, b) => a - b;\n',
      'crash.js': 'module.exports = false;\n',
      'run-tests.js':
        "const fs = require('fs');\n" +
        (crashOnce
          ? "if (!fs.existsSync('.crashed-once')) { fs.writeFileSync('.crashed-once', ''); console.error('RangeError: WebAssembly.instantiate(): Out of memory: Cannot allocate Wasm memory for new instance'); process.exit(1); }\n"
          : '') +
        "if (require('./crash.js')) { console.error('FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory'); process.exit(134); }\n" +
        "const { add } = require('./calc.js');\nconst ok = add(2, 2) === 4;\nconsole.log(ok ? 'ok add' : 'FAIL add');\nconsole.log(`${ok ? 1 : 0} passed, ${ok ? 0 : 1} failed`);\nprocess.exit(ok ? 0 : 1);\n",
    });
    const fix = edit('calc.js', 'a - b', 'a + b');

    it('an attempt whose test runner crashes every time is "could not run" and not ranked; the right fix wins', () => {
      const r = fixWithAttempts(files(false), [[[fix]], [[edit('crash.js', 'false', 'true')]]], ['--attempts', '2']);
      assert.equal(r.report?.status, 'fixed', r.stderr);
      const crashed = r.report!.attempts[1]!.verdict!;
      assert.match(crashed.could_not_run ?? '', /heap ran out of memory/);
      assert.equal(crashed.green, false);
      assert.match(r.stderr, /attempt 1: the tests could not run \(the JavaScript heap ran out of memory/);
      assert.match(r.report!.ending ?? '', /^fixed: attempt 0 won/);
    });

    it('a baseline whose test runner crashed once is run again when no other cell runs, and the run goes on', () => {
      const r = fixWithAttempts(files(true), [[[fix]]]);
      assert.equal(r.report?.status, 'fixed', r.stderr);
      assert.match(r.stderr, /baseline: the tests could not run \(WebAssembly memory could not be reserved/);
      assert.equal(r.report!.baseline.failed, 1);
    });

    it('a run that is not fixed says why, attempt by attempt', () => {
      const r = fixWithAttempts(
        files(false),
        [[[edit('crash.js', 'false', 'true')]], [[edit('calc.js', 'a - b', 'a / b')]]],
        ['--attempts', '2'],
      );
      assert.equal(r.report?.status, 'not_fixed', r.stderr);
      assert.match(
        r.report!.ending ?? '',
        /^not fixed: no attempt passed the tests \(attempt 0: its tests could not run: the JavaScript heap ran out of memory.*; attempt 1: "add" still fails\)$/,
      );
      assert.match(r.stderr, /forge: not fixed: no attempt passed the tests \(attempt 0: its tests could not run/);
    });
  });
});
