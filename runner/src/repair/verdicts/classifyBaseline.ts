import { type DeniedEgress, deniedEgressSaid } from './deniedEgress.js';
import { NETWORK_REFUSED } from './npmLifecycle.js';
import type { TestReport } from './testReport.js';

/**
 * Why a baseline run says nothing about the code: the tests never ran because the
 * environment is broken. Such a run is not "failing tests" (no attempt could make it pass),
 * so the run stops before any attempt, with the cause and the way out.
 */
export interface BrokenEnvironment {
  cause: 'command_not_found' | 'missing_module' | 'no_tests' | 'network' | 'timeout' | 'resources';
  /** One line: what happened, with the evidence (the missing command or module). */
  detail: string;
  /** One line: what to do. */
  fix: string;
}

export interface BaselineFacts {
  exitCode: number;
  timedOut: boolean;
  output: string;
  report: TestReport | null;
  testCmd: string;
  cellTimeoutS: number;
  /** What the egress proxy refused the cell (a cell with allow_net): the hosts the tests wanted. */
  egressDenied?: readonly DeniedEgress[];
}

const lastLine = (text: string, re: RegExp): string | null => {
  const lines = text.split('\n').filter((l) => re.test(l));
  return lines.length > 0 ? lines[lines.length - 1]!.trim().slice(0, 200) : null;
};

/** Pure: the broken environment a baseline run shows, or null when its tests really ran. */
export function classifyBaseline(f: BaselineFacts): BrokenEnvironment | null {
  if (f.timedOut) {
    return {
      cause: 'timeout',
      detail: `the tests did not finish within ${f.cellTimeoutS} s`,
      fix: 'raise --cell-timeout, or narrow --test-cmd to the tests of this issue',
    };
  }
  // Tests that ran and failed are the oracle, whatever else the output says; a run where not
  // one test passed may instead have failed to import anything (pytest counts collection errors).
  const ranSome = f.report !== null && f.report.passed + f.report.skipped > 0;
  if (f.report && f.report.failed > 0 && ranSome) return null;
  const out = f.output;
  const missingCommand = /(?:^|\n)(?:\S*sh: (?:\d+: )?|\S+: line \d+: )?([^\s:]+): (?:command )?not found/.exec(out);
  if ((f.exitCode === 127 || f.exitCode === 126 || missingCommand) && !(f.report && f.report.failed > 0)) {
    const what = missingCommand?.[1] ?? f.testCmd.split(/\s+/)[0] ?? f.testCmd;
    return {
      cause: 'command_not_found',
      detail: `${what}: command not found (exit ${f.exitCode})`,
      fix: `install the project's dependencies in your checkout (e.g. npm ci, or a .venv), pass --install-cmd, or --test-cmd with a command that exists`,
    };
  }
  const module =
    /Cannot find module '([^'./][^']*)'|ModuleNotFoundError: No module named '([^']+)'|ImportError: No module named '?([\w.]+)'?|cannot find package "([^"]+)"|error\[E0463\]: can't find crate for `([^`]+)`/.exec(
      out,
    );
  if (module) {
    const name = module.slice(1).find(Boolean)!;
    return {
      cause: 'missing_module',
      detail: `a module the tests import is missing: ${name}`,
      fix: 'install the dependencies in your checkout (they are shared with every attempt), or pass --install-cmd',
    };
  }
  // The proxy's record names what the tests wanted, where a client's error may say only "403".
  // Tests that failed are still the oracle (a telemetry call refused beside them changes nothing), unless the output says the network failed them.
  const denied = deniedEgressSaid(f.egressDenied ?? [], 'the tests');
  if (
    denied &&
    f.exitCode !== 0 &&
    !(f.report && f.report.passed > 0) &&
    (!(f.report && f.report.failed > 0) || NETWORK_REFUSED.test(out))
  ) {
    return { cause: 'network', detail: denied.detail, fix: denied.fix };
  }
  if (f.exitCode !== 0 && NETWORK_REFUSED.test(out) && !(f.report && f.report.passed > 0)) {
    return {
      cause: 'network',
      detail: `the tests need the network, which cells do not have: ${lastLine(out, NETWORK_REFUSED) ?? ''}`,
      fix: 'let the host it needs through with --allow-net HOST, or install what it downloads beforehand',
    };
  }
  const ranNothing =
    (f.report && f.report.passed + f.report.failed === 0) ||
    /\bno tests ran\b|No tests found|^Ran 0 tests/m.test(out) ||
    (f.exitCode === 5 && /pytest/.test(f.testCmd));
  if (ranNothing) {
    return {
      cause: 'no_tests',
      detail: `${f.testCmd} ran no test`,
      fix: 'pass --test-cmd with the command that runs the tests of this repository',
    };
  }
  return null;
}

/** One line for people: the cause and the fix. */
export function describeBrokenEnvironment(b: BrokenEnvironment): string {
  return `the tests could not run on the base commit, so there is nothing to fix yet: ${b.detail}; ${b.fix}`;
}
