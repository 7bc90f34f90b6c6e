import type { TestReport } from './testReport.js';

/** How a test cell ended, beside its output. */
export interface CellEnd {
  exitCode: number;
  timedOut: boolean;
  killedBy: string | null;
  limitsHit: readonly string[];
}

/** Lines a test runner's death leaves when the machine, not the code, refused it something. */
const CAUSES: readonly [RegExp, string][] = [
  [/WebAssembly\.instantiate\(\): Out of memory|Cannot allocate Wasm memory/, 'WebAssembly memory could not be reserved'],
  [/JavaScript heap out of memory|Reached heap limit|FATAL ERROR: .*[Aa]llocation failed/, 'the JavaScript heap ran out of memory'],
  [/std::bad_alloc|\bMemoryError\b|fatal error: runtime: out of memory|Cannot allocate memory|\bENOMEM\b/, 'out of memory'],
  [/\bEAGAIN\b|Resource temporarily unavailable|pthread_create|fork: retry|Cannot fork/, 'the machine refused a process or thread'],
  [/Unhandled ?Rejection|UnhandledPromiseRejection|ERR_UNHANDLED_REJECTION/, 'an unhandled rejection before any test result'],
];

/**
 * Pure: why a test run could not run, or null when it ran (it reported a test, or it ended in a
 * way the code under test may have caused: a timeout, an ordinary exit). A test runner that
 * died before reporting any result (out of memory, refused a thread, killed by a limit or a
 * signal, an unhandled rejection in the runner) says nothing about the change: it is a failed
 * cell, retried once on an empty machine, never a red attempt ranked as failing tests.
 */
export function testRunCrash(end: CellEnd, output: string, report: TestReport | null): string | null {
  if (end.timedOut || end.exitCode === 0) return null;
  if (report && (report.passed + report.failed + report.skipped > 0 || report.tests.size > 0)) return null;
  const tail = output.slice(-64 * 1024);
  for (const [re, cause] of CAUSES) {
    const line = tail.split('\n').find((l) => re.test(l));
    if (line) return `${cause} (${line.trim().slice(0, 160)})`;
  }
  if (end.limitsHit.includes('memory')) return 'killed by its memory limit';
  if (end.limitsHit.includes('pids')) return 'its process limit refused a process';
  if (end.killedBy === 'signal') return 'the test runner was killed by a signal';
  if (end.exitCode === 137 || end.exitCode === 139 || end.exitCode === 134)
    return `the test runner was killed by signal ${{ 137: 'SIGKILL', 139: 'SIGSEGV', 134: 'SIGABRT' }[end.exitCode]}`;
  return null;
}
