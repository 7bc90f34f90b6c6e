import type { Judged } from './failingSet.js';
import type { TestReport } from './testReport.js';
import { shellQuote } from '../../protocol/shellQuote.js';

/*
 * Failing tests first: an attempt's verdict runs only the baseline's failing tests before the
 * whole suite. Such a run can only make an attempt red (a test that failed on the base commit
 * fails again); it never makes one green, which takes the whole suite. So a selection that
 * misses (a name the framework spells otherwise, a wrapper that drops the filter) costs one
 * short cell. What it cannot tell: a failing test that passes only after another test has run
 * (state one test leaves for the next) fails alone, and the attempt is red where the whole
 * suite might have passed it (docs/cli.md says so; --no-failing-first).
 *
 * Selection goes through the environment wherever the framework reads one, so the user's
 * command runs as it is, with its builds, hooks and nested `npm run`s: go test's GOFLAGS,
 * pytest's PYTEST_ADDOPTS, and for the Node runners (jest, vitest, mocha) a preload in
 * NODE_OPTIONS that adds the filter to the runner's own argv. unittest reads nothing from the
 * environment: only a command that is `python -m unittest ...` itself is extended.
 */

/** How one targeted run selects its tests: variables added to the cell's, and the command (null: the test command as it is). */
export interface TargetedRun {
  /** The baseline's failing tests the run selects (as the baseline's report names them). */
  tests: string[];
  /** Added to the cell's environment: space-joined after a value the cell already has (GOFLAGS=-v). */
  env: Record<string, string>;
  command: string | null;
  /** How, in words: "go test -run". */
  how: string;
}

export type FailingFirstPlan =
  | { kind: 'targeted'; run: TargetedRun }
  /** Nothing to run first: the baseline has no failing test. */
  | { kind: 'none' }
  /** The whole suite, and why (said once per run). */
  | { kind: 'whole'; why: string };

/** More failing tests than this and the filter would be most of a suite: run it whole. */
export const MAX_SELECTED = 100;

/** A filter longer than this is no longer a short list of tests (and an environment entry has a bound: MAX_ARG_STRLEN). */
export const MAX_SELECTION_BYTES = 32 * 1024;

/** Variables a selection may add to: the cell's own value stays, the selection's comes after it. */
export const APPENDED_VARIABLES = new Set(['GOFLAGS', 'PYTEST_ADDOPTS', 'NODE_OPTIONS']);

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Pure: how the attempts' verdicts run the baseline's failing tests first, or why they do not. */
export function failingFirstPlan(testCmd: string, baseline: Judged | null): FailingFirstPlan {
  const report = baseline?.report ?? null;
  if (!report)
    return { kind: 'whole', why: 'the baseline printed no test report the runner reads, so it named no failing test to run first' };
  const named = [...report.tests].filter(([, o]) => o === 'fail').map(([n]) => n);
  if (named.length === 0)
    return report.failed > 0 ? { kind: 'whole', why: 'the baseline named none of its failing tests' } : { kind: 'none' };
  // A name is the repository's output: one with a control character (a NUL no environment
  // can hold, a newline) is not selected; the whole suite still judges it.
  // eslint-disable-next-line no-control-regex
  const failing = named.filter((n) => !/[\x00-\x1f\x7f]/.test(n));
  if (failing.length === 0) return { kind: 'whole', why: "the baseline's failing tests are named with control characters" };
  if (failing.length > MAX_SELECTED)
    return { kind: 'whole', why: `the baseline has ${failing.length} failing tests (more than ${MAX_SELECTED} are most of a suite)` };
  if (report.framework.includes(' + '))
    return { kind: 'whole', why: `the test command runs more than one framework (${report.framework}), which one filter cannot select in` };
  const plan = SELECTORS[report.framework]?.(failing, testCmd) ?? null;
  if (plan === null) return { kind: 'whole', why: `selecting ${report.framework} tests by name is not supported` };
  if ('why' in plan) return { kind: 'whole', why: plan.why };
  const size = Buffer.byteLength(JSON.stringify(plan.env)) + Buffer.byteLength(plan.command ?? '');
  if (size > MAX_SELECTION_BYTES)
    return {
      kind: 'whole',
      why: `the filter for the baseline's ${failing.length} failing tests would be ${size} bytes (more than ${MAX_SELECTION_BYTES})`,
    };
  return { kind: 'targeted', run: plan };
}

type Selector = (failing: string[], testCmd: string) => TargetedRun | { why: string };

const SELECTORS: Record<string, Selector> = {
  'go test': selectGo,
  pytest: selectPytest,
  unittest: selectUnittest,
  jest: (failing) => selectNode('jest', failing, (names) => ['-t', `^(?:${names.map(chainPattern).join('|')})$`]),
  mocha: (failing) => selectNode('mocha', failing, (names) => ['--grep', `^(?:${names.map(chainPattern).join('|')})$`]),
  vitest: selectVitest,
};

/** jest and mocha name a test by its describe chain and title ("a › b" here); their filters match the chain joined by spaces. */
const chainPattern = (name: string) => name.split(' › ').map(escapeRegExp).join(' ');

/**
 * go test: `-run` through GOFLAGS (flags there apply to every `go test` the command starts, and
 * a `-run` of the command's own wins). It matches top-level tests and examples; a subtest runs
 * inside its parent. A name the report prefixed with its package (two packages had that test)
 * selects the test in both.
 */
function selectGo(failing: string[]): TargetedRun | { why: string } {
  const top = new Map<string, string[]>();
  for (const n of failing) {
    const m = /(?:^|\.)((?:Test|Example|Fuzz)[A-Za-z0-9_]*)(?:\/|$)/.exec(n);
    if (m) top.set(m[1]!, [...(top.get(m[1]!) ?? []), n]);
  }
  if (top.size === 0) return { why: 'none of the baseline\'s failing go tests has a name "go test -run" can select' };
  return {
    tests: [...top.values()].flat(),
    // GOFLAGS is split on spaces: a Go identifier has none.
    env: { GOFLAGS: `-run=^(?:${[...top.keys()].join('|')})$` },
    command: null,
    how: 'go test -run',
  };
}

/**
 * pytest: the failing node ids as arguments through PYTEST_ADDOPTS (shlex-quoted). A path the
 * command names itself is collected too, so such a command runs more than the failing tests;
 * a node id pytest does not find ends the run without results, and the whole suite runs next.
 */
function selectPytest(failing: string[]): TargetedRun | { why: string } {
  // A pytest 9 subtest's name is its test's node id and a label after a space.
  const ids = new Map<string, string[]>();
  for (const n of failing) {
    // A path's first character is a word, a dot or a slash: pytest reads "-x" as a flag and "@x" as a file of arguments.
    const id = /^[\w./][^\s:]*::[^\s[]+(?:\[[^\]\n]*\])?/.exec(n)?.[0];
    if (id) ids.set(id, [...(ids.get(id) ?? []), n]);
  }
  if (ids.size === 0) return { why: "none of the baseline's failing pytest tests is named by a node id" };
  return {
    tests: [...ids.values()].flat(),
    env: { PYTEST_ADDOPTS: [...ids.keys()].map(shellQuote).join(' ') },
    command: null,
    how: 'pytest node ids',
  };
}

/**
 * unittest: `-k` (Python 3.7+: a substring of the test's dotted name), added to a command that
 * is `python -m unittest ...` itself, with plain words only (a wrapper's command, a pipe, a
 * `;` would take the flags elsewhere).
 */
function selectUnittest(failing: string[], testCmd: string): TargetedRun | { why: string } {
  if (!/^\s*python(?:3(?:\.\d+)?)? -m unittest(?:\s+[\w./=:-]+)*\s*$/.test(testCmd))
    return { why: 'unittest tests are selected only when the test command is "python -m unittest ..." itself' };
  const names = failing.filter((n) => /^[A-Za-z_][\w.]*$/.test(n));
  if (names.length === 0) return { why: "none of the baseline's failing unittest tests has a dotted name" };
  return {
    tests: names,
    env: {},
    command: `${testCmd.trim()} ${names.map((n) => `-k ${shellQuote(n)}`).join(' ')}`,
    how: 'unittest -k',
  };
}

/**
 * vitest: the failing tests' files as filters and `-t` on their describe chains. vitest names
 * a test "file > describe > title" and matches `-t` against the chain joined by spaces.
 */
function selectVitest(failing: string[]): TargetedRun | { why: string } {
  const named = failing
    .map((n) => ({ n, m: /^(?:\|[^|]+\| )?([^\s>|]+\.\w+) > (.+)$/.exec(n) }))
    // A file filter that is not a path (a "-" flag) is no test of the baseline's.
    .filter((x): x is { n: string; m: RegExpExecArray } => x.m !== null && /^[\w./]/.test(x.m[1]!));
  if (named.length === 0) return { why: "none of the baseline's failing vitest tests is named with its file" };
  const files = [...new Set(named.map((x) => x.m[1]!))];
  const chains = named.map((x) => x.m[2]!.split(' > ').map(escapeRegExp).join(' '));
  return selectNode(
    'vitest',
    named.map((x) => x.n),
    () => [...files, '-t', `(?:^| )(?:${chains.join('|')})$`],
  );
}

/** The runner's entry script, as its package installs it (argv[1] after links are resolved). */
const NODE_RUNNERS: Record<'jest' | 'mocha' | 'vitest', RegExp> = {
  jest: /\/(?:jest|jest-cli)\/bin\/jest(?:\.js)?$/,
  mocha: /\/mocha\/bin\/(?:_mocha|mocha(?:\.js)?)$/,
  vitest: /\/vitest\/vitest\.mjs$/,
};

/** Set in the runner's own environment once its argv has the filter: a runner it starts (old mocha's _mocha) gets the argv as it is. */
const APPLIED = 'FORGE_FAILING_FIRST_APPLIED';

/**
 * jest, mocha, vitest: read no filter from the environment, and run behind `npm test`, a nested
 * `npm run`, pnpm or yarn. A module NODE_OPTIONS imports into every node process of the cell
 * adds the filter to the argv of the one that is the runner's entry script. Node 20.6+ takes
 * `--import` there; an older node refuses NODE_OPTIONS, the run names no test, and the whole
 * suite runs next.
 */
function selectNode(runner: keyof typeof NODE_RUNNERS, tests: string[], args: (names: string[]) => string[]): TargetedRun {
  const code = [
    "import { realpathSync } from 'node:fs';",
    'try {',
    `  if (!process.env.${APPLIED} && process.argv[1] && ${NODE_RUNNERS[runner].toString()}.test(realpathSync(process.argv[1]))) {`,
    `    process.argv.push(...${JSON.stringify(args(tests))});`,
    `    process.env.${APPLIED} = '1';`,
    // What the runner starts (its workers, a CLI a test spawns) gets NODE_OPTIONS without this
    // import: an --import makes node load a main script as ES modules, which breaks programs
    // that rely on a require hook, and a test of one would fail here and not in the whole suite.
    `    const own = (process.env.NODE_OPTIONS ?? '').split(' ').filter((o) => !o.startsWith('--import=data:text/javascript,')).join(' ');`,
    '    if (own) process.env.NODE_OPTIONS = own; else delete process.env.NODE_OPTIONS;',
    '  }',
    '} catch {}',
  ].join('\n');
  // A data: URL with every special character escaped: NODE_OPTIONS splits on spaces and quotes.
  const url = `data:text/javascript,${encodeURIComponent(code).replace(/['()*!~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
  return { tests, env: { NODE_OPTIONS: `--import=${url}` }, command: null, how: `${runner} ${runner === 'mocha' ? '--grep' : '-t'}` };
}

export type TargetedOutcome =
  /** Every selected test failed again: the attempt is red, and changed nothing the issue's tests see. */
  | { red: true; stillFailing: string[] }
  /** Some or all of them passed, or the run did not name them all: the whole suite decides. */
  | { red: false; why: string };

/**
 * Pure: what a targeted run says. Red only when its report names every one of the baseline's
 * failing tests it selected failing again: the attempt changed nothing those tests see, and
 * what else it broke is not worth a whole suite. An attempt that fixed some of them may be a
 * fix (the rest failing before and after, issueTests.ts) or the kind a user compares (the
 * closest attempt, a partial fix that broke something): the whole suite decides and names its
 * regressions. Anything else (they passed, the
 * filter missed, no report) goes to the whole suite too.
 */
export function targetedOutcome(run: TargetedRun, report: TestReport | null, crashed: string | null): TargetedOutcome {
  if (crashed) return { red: false, why: `the targeted run could not run (${crashed})` };
  if (!report) return { red: false, why: 'the targeted run printed no test report the runner reads' };
  const stillFailing = run.tests.filter((n) => report.tests.get(n) === 'fail');
  if (stillFailing.length === run.tests.length) return { red: true, stillFailing };
  const passed = run.tests.filter((n) => report.tests.get(n) === 'pass').length;
  const n = plural(run.tests.length, 'failing test');
  if (stillFailing.length > 0)
    return {
      red: false,
      why: `${passed} of the ${n} passed, ${stillFailing.length} failed again: the whole suite decides (one failing before and after is not the change's doing) and names what else it changed`,
    };
  return {
    red: false,
    why:
      passed === run.tests.length
        ? `the ${n} passed`
        : report.failed === 0 && report.passed > 0
          ? // jest lists no passing test by name when it runs more than one file: its totals say none failed.
            `the targeted run of the ${n} passed (${plural(report.passed, 'test')}, none failing)`
          : `the targeted run named ${passed} of the ${n}, none failing`,
  };
}

export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
