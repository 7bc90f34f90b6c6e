import { parseTestOutput } from './parsers.js';
import { plain } from './testReport.js';

/**
 * Pure: why an attempt's failed npm hook is not the same failure the base commit's hook has, or
 * null when it is. A hook that runs several checks (node --test over two files, mocha, make -k)
 * reports them all: one remote check failing for want of the network must not hide a local one
 * the change broke. When the hook names its checks (a test report), the attempt may fail only
 * what fails on the base; otherwise every error line it prints must be one the base printed.
 */
export function differentHookFailure(attemptOutput: string, baseOutput: string): string | null {
  const a = parseTestOutput(plain(attemptOutput));
  const b = parseTestOutput(plain(baseOutput));
  if (a || b) {
    if (!a || !b) return "its output cannot be compared with the base commit's";
    const failsOnBase = new Set([...b.tests].filter(([, o]) => o === 'fail').map(([n]) => n));
    const extra = [...a.tests].filter(([n, o]) => o === 'fail' && !failsOnBase.has(n)).map(([n]) => n);
    if (extra.length > 0)
      return `it fails ${extra.slice(0, 3).join(', ')}${extra.length > 3 ? ', ...' : ''}, which the base commit's does not`;
    if (a.failed > b.failed) return `it fails ${a.failed} checks, the base commit's ${b.failed}`;
    return null;
  }
  const base = errorLines(baseOutput);
  const extra = [...errorLines(attemptOutput)].find((l) => !base.has(l));
  return extra === undefined ? null : `it says what the base commit's does not ("${extra.slice(0, 120)}")`;
}

/** Lines that report a failure, with what differs between two runs of the same thing (numbers, times) evened out. */
function errorLines(output: string): Set<string> {
  return new Set(
    plain(output)
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /error|fail|ERR!|not ok|✖|✗|refused|EAI_AGAIN|ENOTFOUND|unreachable|assert/i.test(l))
      .map((l) => l.replace(/\d+/g, '0')),
  );
}
