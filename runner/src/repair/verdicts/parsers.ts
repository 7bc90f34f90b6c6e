import { parseJunitXml } from './junitXml.js';
import { parseRuns } from './mixedOutput.js';
import { countTests, emptyReport, plain, type TestOutcome, type TestReport } from './testReport.js';

export { parseJunitXml };

/**
 * Pure parsers, one per framework. Each returns null when the output is not its own, so
 * parseTestOutput can try them in turn. All read the merged stdout+stderr of a cell.
 */

const num = (s: string | undefined) => (s === undefined ? 0 : Number(s));

/** pytest: "=== 2 failed, 3 passed, 1 skipped in 0.12s ===" (or -q without the rules). */
export function parsePytest(out: string): TestReport | null {
  const lines = out.split('\n');
  // Every run's summary adds up (`pytest tests/unit; pytest tests/e2e`).
  const summaries = lines.filter(
    // Its whole line: counts joined by ", ", then the time ("1 failed, 2 passed in 0.12s", in
    // rules or not); another tool's "1 passed; 1 failed; ... finished in 0.1s" is not pytest's.
    (l) =>
      /^=*\s*\d+ [a-z ]+(?:, \d+ [a-z ]+)* in [\d.]+s(?: \([\d:]+\))?\s*=*\s*$/.test(l.trim()) ||
      /^=*\s*no tests ran in [\d.]+s(?: \([\d:]+\))?\s*=*\s*$/.test(l.trim()),
  );
  if (summaries.length === 0) return null;
  const count = (word: string) => summaries.reduce((n, summary) => n + num(new RegExp(`(\\d+) ${word}\\b`).exec(summary)?.[1]), 0);
  const r = emptyReport('pytest');
  r.passed = count('passed') + count('xpassed');
  r.failed = count('failed') + count('errors?');
  r.skipped = count('skipped') + count('xfailed') + count('deselected');
  for (const l of lines) {
    const t = l.trim();
    // A node id's parameters may hold spaces and " - " ("test_eval[10 - 1]"): they end at its "]".
    const m = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+?::[^\s[]+(?:\[[^\]]*\])?)(?: - .*)?$/.exec(t);
    if (m) {
      const outcome: TestOutcome = m[1] === 'PASSED' || m[1] === 'XPASS' ? 'pass' : m[1] === 'FAILED' || m[1] === 'ERROR' ? 'fail' : 'skip';
      if (r.tests.get(m[2]!) !== 'fail') r.tests.set(m[2]!, outcome);
      continue;
    }
    // pytest 9 subtests: "SUBFAILED[msg] (i=1) test_x.py::test_y - AssertionError".
    const sub = /^SUB(PASSED|FAILED|SKIPPED)(\[[^\]]*\])?((?: \([^)]*\))*) (\S+?::\S+?)(?: - .*)?$/.exec(t);
    if (sub) {
      const label = `${sub[2] ?? ''}${sub[3] ?? ''}`.trim();
      r.tests.set(`${sub[4]!}${label ? ` ${label}` : ''}`, sub[1] === 'PASSED' ? 'pass' : sub[1] === 'FAILED' ? 'fail' : 'skip');
    }
  }
  return r;
}

/** node --test with the spec reporter (on a terminal): "ℹ pass 3", "✔ name (1.2ms)". */
export function parseNodeTest(out: string): TestReport | null {
  if (!/^ℹ tests (\d+)$/m.test(out) || !/^ℹ pass (\d+)$/m.test(out)) return null;
  const get = (k: string) => num(new RegExp(`^ℹ ${k} (\\d+)$`, 'm').exec(out)?.[1]);
  const r = emptyReport('node:test');
  r.passed = get('pass');
  r.failed = get('fail') + get('cancelled');
  r.skipped = get('skipped') + get('todo');
  // A suite ("▶ name") indents its tests two spaces deeper: those are named with the suites that
  // hold them ("squash › keeps order"), so one failing test of a failing suite is seen.
  const chain: string[] = [];
  // After its totals the reporter recalls each failure by its title alone ("✖ failing tests:"):
  // read there, a failing suite test would name a passing top-level test of the same title.
  const recap = out.search(/^✖ failing tests:$/m);
  for (const l of (recap < 0 ? out : out.slice(0, recap)).split('\n')) {
    const suite = /^((?: {2})*)▶ (.+)$/.exec(l);
    if (suite) {
      chain.length = suite[1]!.length / 2;
      chain.push(suite[2]!.trim());
      continue;
    }
    const t = /^((?: {2})*)([✔✖﹣]) (.+?) \([\d.]+m?s\)(.*)$/.exec(l);
    if (!t) continue;
    const depth = t[1]!.length / 2;
    // Text after the duration is a directive: "# SKIP", "# TODO" or a todo's reason; a todo that fails is no failure.
    const outcome = t[4]!.trim().startsWith('#') ? 'skip' : t[2] === '✔' ? 'pass' : t[2] === '✖' ? 'fail' : 'skip';
    if (depth === 0) r.tests.set(t[3]!, outcome);
    else if (chain.length >= depth && chain.slice(0, depth).every((c) => c !== undefined))
      r.tests.set([...chain.slice(0, depth), t[3]!].join(' › '), outcome);
  }
  return r;
}

/**
 * TAP (node --test piped, tape, node-tap...): "ok 1 - name", "not ok 2 - name # SKIP", and
 * the totals producers print ("# pass  169", "# fail 2": any spacing). node:test names its
 * top-level tests, and each test inside a suite as "suite › test"; tape names assertions under
 * "# test name" comments, so names are "test › assertion"; a repeated name gets " #2".
 */
export function parseTap(out: string): TestReport | null {
  // A script may run several TAP streams (npm run a && npm run b): each prints its totals; they add up.
  const total = (k: string) => {
    const all = [...out.matchAll(new RegExp(`^# ${k}[ \\t]+(\\d+)[ \\t]*$`, 'gm'))];
    return all.length === 0 ? undefined : String(all.reduce((sum, m) => sum + Number(m[1]), 0));
  };
  const plan = /^1\.\.\d+$/m.test(out);
  // Plain TAP (a plan and ok / not ok lines, no totals, as C and Perl producers print) is counted from its lines.
  const bare = total('pass') === undefined && plan && /^(?:not )?ok \d+/m.test(out);
  if (!bare && (total('pass') === undefined || (total('tests') === undefined && total('fail') === undefined && !plan))) return null;
  const nodeTest = /^# Subtest: /m.test(out) || /^# suites \d+$/m.test(out);
  const r = emptyReport(nodeTest ? 'node:test' : 'tap');
  r.passed = num(total('pass'));
  r.failed = num(total('fail')) + num(total('cancelled'));
  r.skipped = num(total('skipped')) + num(total('todo')) + num(total('skip'));
  let group = '';
  const seen = new Map<string, number>();
  const named = (base: string) => {
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return n === 1 ? base : `${base} #${n}`;
  };
  // node:test (and node-tap) nest a suite's tests four spaces deeper, each after "# Subtest: name".
  const chain: string[] = [];
  let results = 0;
  for (const l of out.split('\n')) {
    // A new stream (`tape a.js; sh cli.sh`): tape's "# group" of the last one names nothing here.
    if (/^TAP version \d+$/.test(l) || (results > 0 && /^(?:not )?ok 1\b/.test(l))) group = '';
    if (/^(?:not )?ok \d+\b/.test(l)) results++;
    if (nodeTest) {
      const sub = /^((?: {4})*)# Subtest: (.*)$/.exec(l);
      if (sub) {
        chain.length = sub[1]!.length / 4;
        chain.push(sub[2]!.trim());
        continue;
      }
      // A test inside a suite is named with the suites that hold it ("squash › keeps order"),
      // besides the top-level result: a regression in one of a failing suite's tests is not
      // hidden by the suite failing before and after (red team 4).
      const nested = /^((?: {4})+)(not ok|ok) \d+(?: -)? ?(.*?)(?: # (SKIP|TODO)\b.*)?$/.exec(l);
      if (nested) {
        const depth = nested[1]!.length / 4;
        if (chain.length >= depth && chain.slice(0, depth).every((c) => c !== undefined))
          r.tests.set(named([...chain.slice(0, depth), nested[3]!].join(' › ')), nested[4] ? 'skip' : nested[2] === 'ok' ? 'pass' : 'fail');
        continue;
      }
    }
    // tape announces a skipped test as a comment: "# SKIP name".
    const skipped = !nodeTest ? /^# SKIP (.+)$/.exec(l) : null;
    if (skipped) {
      r.tests.set(skipped[1]!.trim(), 'skip');
      if (total('skip') === undefined && total('skipped') === undefined) r.skipped++;
      continue;
    }
    const comment = /^# (?!tests\b|pass\b|fail\b|skip|todo\b|suites\b|cancelled\b|duration|Subtest:|ok\b)(.+)$/.exec(l);
    if (comment && !nodeTest) {
      group = comment[1]!.trim();
      continue;
    }
    const t = /^(not ok|ok) \d+(?: -)? ?(.*?)(?: # (SKIP|TODO)\b.*)?$/.exec(l);
    if (!t) continue;
    const name = named(nodeTest || !group ? t[2]! : `${group} › ${t[2]!}`);
    r.tests.set(name, t[3] ? 'skip' : t[1] === 'ok' ? 'pass' : 'fail');
    if (bare) {
      if (t[3]) r.skipped++;
      else if (t[1] === 'ok') r.passed++;
      else r.failed++;
    }
  }
  const cut = tapStreamCutShort(out);
  if (cut) r.cutShort = cut;
  // A stream without totals beside one with them (`tape a.js; sh cli.sh`): its results count
  // too. (node:test's totals count top-level tests, its names the tests inside suites as well.)
  if (!nodeTest) {
    const listed = countTests(r);
    r.passed = Math.max(r.passed, listed.passed);
    r.failed = Math.max(r.failed, listed.failed);
  }
  return r;
}

/**
 * Pure: why a TAP output with several streams holds one that stopped before its end, or null.
 * A stream starts at "TAP version N" or at a top-level "ok 1" after other results (producers
 * without a version line: bats, Perl, a shell script), and ends with its plan, before or after
 * its results: one that stops without it was cut short, whatever a later stream printed
 * (`tape a.js; sh cli.sh` after a.js threw; red team). A plan between two streams is the
 * earlier one's only when it counts that one's results.
 */
function tapStreamCutShort(out: string): string | null {
  interface Stream {
    results: number;
    last: number;
    planned: boolean;
  }
  const streams: Stream[] = [];
  let leadingPlan = false;
  const open = (): Stream => {
    const st = { results: 0, last: 0, planned: leadingPlan };
    leadingPlan = false;
    streams.push(st);
    return st;
  };
  for (const l of out.split('\n')) {
    const current = streams.at(-1);
    if (/^TAP version \d+$/.test(l)) {
      open();
      continue;
    }
    const plan = /^1\.\.(\d+)\b/.exec(l);
    if (plan) {
      if (current && !current.planned && (current.results === 0 || Number(plan[1]) === current.last)) current.planned = true;
      else leadingPlan = true;
      continue;
    }
    const t = /^(?:not )?ok (\d+)\b/.exec(l);
    if (!t) continue;
    const st = !current || (Number(t[1]) === 1 && current.results > 0) ? open() : current;
    st.results++;
    st.last = Number(t[1]);
  }
  const counted = streams.filter((st) => st.results > 0);
  const cut = counted.findIndex((st) => !st.planned);
  if (counted.length < 2 || cut < 0) return null;
  return `its TAP stream ${cut + 1} of ${counted.length} stops after test ${counted[cut]!.last} without a plan, so tests after it did not run`;
}

/**
 * Python's unittest: "Ran 3 tests in 0.001s" then "OK" / "FAILED (failures=1, errors=1,
 * skipped=1)"; names from -v lines ("test_x (mod.Cls.test_x) ... ok") and from the
 * "FAIL: test_x (mod.Cls.test_x)" headers it prints either way.
 */
export function parseUnittest(out: string): TestReport | null {
  const ran = /^Ran (\d+) tests? in [\d.]+s$/m.exec(out);
  if (!ran) return null;
  const verdict = /^(OK|FAILED)(?: \(([^)]*)\))?[ \t]*$/m.exec(out.slice(ran.index));
  if (!verdict) return null;
  const counts = Object.fromEntries(
    (verdict[2] ?? '')
      .split(',')
      .map((kv) => kv.trim().split('='))
      .filter((kv) => kv.length === 2)
      .map(([k, v]) => [k!, num(v)]),
  );
  const r = emptyReport('unittest');
  r.failed = (counts.failures ?? 0) + (counts.errors ?? 0) + (counts.unexpected_successes ?? 0);
  r.skipped = (counts.skipped ?? 0) + (counts.expected_failures ?? 0);
  r.passed = num(ran[1]) - r.failed - r.skipped;
  // Python 3.11+ prints "test_x (mod.Cls.test_x)", older ones "test_x (mod.Cls)", a doctest "add (mod)":
  // the dotted path to the test either way, so two methods of one class never share a name.
  const nameOf = (method: string, dotted: string) => (dotted === method || dotted.endsWith(`.${method}`) ? dotted : `${dotted}.${method}`);
  const RESULT = / \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)/;
  let pending: string | null = null;
  const subtestFailures: string[] = [];
  for (const l of out.split('\n')) {
    // With -v, a test with a description (a docstring's first line, "Doctest: mod.add") has it,
    // and its result, on the line after its name.
    const v = /^(\w+) \(([\w.]+)\)(.*)$/.exec(l);
    const result = RESULT.exec(l);
    const name: string | null = v ? nameOf(v[1]!, v[2]!) : pending;
    pending = v && !result ? name : null;
    if (name && result)
      r.tests.set(name, result[1] === 'ok' || result[1] === 'expected failure' ? 'pass' : result[1] === 'skipped' ? 'skip' : 'fail');
    // A subtest's header goes on with its message and parameters: "... (mod.Cls.test_x) [msg] (n=2)".
    const h = /^(FAIL|ERROR): (\w+) \(([\w.]+)\)(.*)$/.exec(l);
    if (h) r.tests.set(nameOf(h[2]!, h[3]!), 'fail');
    if (h && /^ [[(]/.test(h[4]!)) subtestFailures.push(nameOf(h[2]!, h[3]!));
  }
  // Each failing subtest ("FAIL: test_x (mod.Cls.test_x) (n=2)") counts as a failure in the
  // totals, while "Ran N tests" counts its test once: they are one failing test.
  const repeats = subtestFailures.length - new Set(subtestFailures).size;
  if (repeats > 0 && repeats < r.failed) {
    r.failed -= repeats;
    r.passed += repeats;
  }
  return r;
}

/**
 * mocha (spec reporter): each run's list, then "  3 passing (12ms)", "  1 failing", "  2
 * pending" and its numbered account of each failure. A command may run mocha more than once
 * (`mocha test/unit; mocha test/integration`) and a test may print another run's report: every
 * run's totals and failures add up, since nothing printed can take a failure away (red team:
 * the last totals alone hid a first run's failure).
 */
export function parseMocha(out: string): TestReport | null {
  const totals = [...out.matchAll(/^[ \t]*(\d+) passing \(\d+(?:ms|s|m)\)$/gm)];
  if (totals.length === 0) return null;
  const r = emptyReport('mocha');
  let from = 0;
  totals.forEach((passing, k) => {
    // A run's account of its failures runs from its totals to the next run's totals (whose
    // list comes first); "N failing" is right under its own "N passing".
    const tail = out.slice(passing.index, totals[k + 1]?.index ?? out.length);
    const failed = num(/^[ \t]*(\d+) failing$/m.exec(tail)?.[1]);
    r.passed += num(passing[1]);
    r.failed += failed;
    r.skipped += num(/^[ \t]*(\d+) pending$/m.exec(tail)?.[1]);
    readIndentedList(out.slice(from, passing.index), r.tests, {
      pass: /^[✔✓] (.+?)(?: \(\d+ms\))?$/,
      skip: /^- (.+)$/,
      fail: mochaFailures(mochaFailureDetails(tail), failed),
      // A failing line mocha's account does not name is a test's own console: no suite either.
      failMark: /^\d+\) /,
      totals: /^\d+ (?:passing|failing|pending)\b/,
    });
    from = passing.index;
  });
  return r;
}

/**
 * A failing line of mocha's list, "  1) title", is one only when the account of failure 1
 * after the totals names it (a test's own console can print that shape), or, with no account,
 * when 1 is within the count. The failure is named by that account, which mocha prints from
 * the test itself, suites and all: the list's indentation is only a guess where tests print
 * to the console (red team 7: a test printing "  parse" renamed a regression onto another
 * test). mocha 2 prints the account's chain on one line: there the list's chain is used when
 * it reads the same. A hook's failure ('"before each" hook for "starts empty"') is the
 * failure of the test it ran for: a fix makes that test pass under its own name.
 */
function mochaFailures(details: Map<number, string[]>, failed: number) {
  const hookless = (title: string) => /^"(?:before|after) (?:each|all)" hook for "(.+)"$/.exec(title)?.[1] ?? title;
  return (line: string, suites: readonly string[]): { name: string } | null => {
    const m = /^(\d+)\) (.+)$/.exec(line);
    if (!m) return null;
    const n = Number(m[1]);
    const title = m[2]!.trim();
    const account = details.get(n);
    if (details.size > 0 ? !account?.join(' ').endsWith(title) : n > failed) return null;
    const listed = [...suites, hookless(title)].join(' › ');
    if (!account) return { name: listed };
    if (account.length > 1) return { name: [...account.slice(0, -1), hookless(account.at(-1)!)].join(' › ') };
    return { name: [...suites, title].join(' ') === account[0] ? listed : hookless(account[0]!) };
  };
}

/**
 * Pure: a reporter's list of tests under the suites that hold them, each suite on its own line
 * with its tests two or more spaces deeper (mocha's spec reporter, jest --verbose): every test
 * is named with its suites ("parse › handles empty input"), passing or failing alike, so the
 * same title in two suites (or at the top) is two tests. Lines at the left margin are the
 * tests' own console, not the reporter's, and hold no suite.
 */
function readIndentedList(
  text: string,
  tests: Map<string, TestOutcome>,
  shapes: {
    pass: RegExp;
    skip: RegExp;
    /** A failing test's title (named with the suites above it), or its whole name, or null: not a failure. */
    fail: (line: string, suites: readonly string[]) => string | { name: string } | null;
    failMark?: RegExp;
    totals?: RegExp;
  },
): void {
  const suites: { indent: number; title: string }[] = [];
  const set = (title: string, outcome: TestOutcome) => {
    const name = [...suites.map((s) => s.title), title].join(' › ');
    if (tests.get(name) !== 'fail') tests.set(name, outcome);
  };
  for (const line of text.split('\n')) {
    const body = line.trim();
    const indent = line.length - line.trimStart().length;
    if (body === '' || indent < 2) continue;
    // Another run's totals (a report a test printed) close every suite.
    if (shapes.totals?.test(body)) {
      suites.length = 0;
      continue;
    }
    const pass = shapes.pass.exec(body);
    const failed = shapes.fail(
      body,
      suites.filter((s) => s.indent < indent).map((s) => s.title),
    );
    const skip = shapes.skip.exec(body);
    // A failing line the reporter's account does not confirm is the test's console: no test, no suite, nothing closed.
    if (!pass && failed === null && !skip && shapes.failMark?.test(body)) continue;
    while (suites.length > 0 && suites.at(-1)!.indent >= indent) suites.pop();
    if (pass) set(pass[1]!.trim(), 'pass');
    else if (typeof failed === 'string') set(failed, 'fail');
    else if (failed !== null && tests.get(failed.name) !== 'fail') tests.set(failed.name, 'fail');
    else if (skip) set(skip[1]!.trim(), 'skip');
    else suites.push({ indent, title: body });
  }
}
/**
 * Pure: mocha's account of each failure after its totals, by number: "  1) squash", its nested
 * suites one per line, indented deeper, and the test's title ending in ":" ("       keeps
 * order:"); mocha 2 prints the whole chain on one line.
 */
function mochaFailureDetails(tail: string): Map<number, string[]> {
  const byNumber = new Map<number, string[]>();
  const lines = tail.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const head = /^[ \t]+(\d+)\) (.+)$/.exec(lines[i]!);
    if (!head) continue;
    // mocha puts the k-th title of the chain on its own line, 5 + 2k spaces in, whatever the
    // number's width: a suite's own title may end in ":" too ("config:"). mocha 2 prints the
    // whole chain on the first line and its error 5 spaces in: there the chain is that line.
    const chain = [head[2]!.trim()];
    let indent = 5;
    for (let j = i + 1; j < lines.length && j <= i + 32; j++) {
      const next = lines[j]!;
      if (next.trim() === '' || /^[ \t]*/.exec(next)![0].length !== indent + 2) break;
      chain.push(next.trim());
      indent += 2;
    }
    if (chain.at(-1)!.endsWith(':')) byNumber.set(Number(head[1]), [...chain.slice(0, -1), chain.at(-1)!.slice(0, -1)]);
  }
  return byNumber;
}

/**
 * AVA: "✔ name" / "✘ [fail]: name" per test ("file › name" with several files), "- name" for
 * a skipped one, and closing totals ("25 tests passed", "1 test failed", "2 tests skipped",
 * "1 uncaught exception"); when a test fails AVA prints no passed total.
 */
export function parseAva(out: string): TestReport | null {
  const totals = [
    ...out.matchAll(
      /^[ \t]+(\d+) (tests? passed|tests? failed|known failures?|tests? skipped|tests? todo|uncaught exceptions?|unhandled rejections?)$/gm,
    ),
  ];
  if (totals.length === 0 || !/^[ \t]+(?:✔|✘ \[fail\]:) /m.test(out)) return null;
  const r = emptyReport('ava');
  const lines = out.split('\n');
  const titles = avaFailureTitles(lines);
  // The list ends at the rule; after it a diff's "  - 1" is no skipped test.
  const rule = lines.findIndex((l) => /^[ \t]+─$/.test(l));
  for (const l of rule < 0 ? lines : lines.slice(0, rule)) {
    const pass = /^[ \t]+✔ (?:\[expected fail\] )?(.+?)(?: \(\d+(?:\.\d+)?m?s\))?$/.exec(l);
    const fail = /^[ \t]+✘ \[fail\]: (.+?)(?: \(\d+(?:\.\d+)?m?s\))?$/.exec(l);
    const skip = /^[ \t]+- (?:\[skip\] )?(.+)$/.exec(l);
    if (pass) r.tests.set(pass[1]!, 'pass');
    else if (fail) {
      // The line carries the error's message after the title ("throws Error thrown in test"):
      // the title is the longest one of the account after the rule that starts it.
      const title = titles.filter((t) => fail[1] === t || fail[1]!.startsWith(`${t} `)).sort((a, b) => b.length - a.length)[0];
      r.tests.set(title ?? fail[1]!, 'fail');
    } else if (skip && !/^[ \t]+- ['"]/.test(l)) r.tests.set(skip[1]!, 'skip');
  }
  const counted = countTests(r);
  const total = (word: RegExp) => totals.filter((m) => word.test(m[2]!)).reduce((n, m) => n + Number(m[1]), 0);
  // Uncaught exceptions and unhandled rejections fail the run without a test's name.
  const failed = Math.max(total(/failed/), counted.failed) + total(/uncaught|unhandled/);
  return { ...counted, failed, skipped: Math.max(total(/skipped|todo/), counted.skipped) };
}

/** Pure: the lines of AVA's account of its failures (after its "─" rule) that may be a title: alone between blank lines. */
function avaFailureTitles(lines: readonly string[]): string[] {
  const rule = lines.findIndex((l) => /^[ \t]+─$/.test(l));
  if (rule < 0) return [];
  const titles: string[] = [];
  for (let i = rule + 2; i < lines.length - 1; i++) {
    if (lines[i - 1]!.trim() === '' && lines[i + 1]!.trim() === '' && /^ {2}\S/.test(lines[i]!)) titles.push(lines[i]!.trim());
  }
  return titles;
}

/**
 * jest: "Tests:       1 failed, 2 passed, 3 total"; names from --verbose's list (✓ / ✕ / ○
 * under indented describe titles) and from each failure's "● a › b" account, both with the
 * suites that hold the test, so the same title in two suites is two tests.
 */
export function parseJest(out: string): TestReport | null {
  const line = /^Tests:[ \t]+(.+ total)$/m.exec(out)?.[1];
  if (!line) return null;
  const count = (w: string) => num(new RegExp(`(\\d+) ${w}`).exec(line)?.[1]);
  const r = emptyReport('jest');
  r.passed = count('passed');
  r.failed = count('failed');
  r.skipped = count('skipped') + count('todo');
  // Each file's list follows its "PASS  file" / "FAIL  file" line; its failures' accounts come after it.
  for (const file of out.split(/^ ?(?:PASS|FAIL) {1,2}\S.*$/m)) {
    const account = file.search(/^\s+● /m);
    readIndentedList(account < 0 ? file : file.slice(0, account), r.tests, {
      pass: /^✓ (.+?)(?: \(\d+(?:\.\d+)? m?s\))?$/,
      skip: /^[○✎] (?:skipped |todo )?(.+?)$/,
      fail: (l) => /^✕ (.+?)(?: \(\d+(?:\.\d+)? m?s\))?$/.exec(l)?.[1] ?? null,
    });
  }
  for (const m of out.matchAll(/^\s+● (.+)$/gm)) {
    const name = m[1]!.trim();
    if (name !== 'Console' && name !== 'Test suite failed to run') r.tests.set(name, 'fail');
  }
  return r;
}

/**
 * vitest: "      Tests  1 failed | 3 passed (4)". A test is named with its file and describe
 * chain ("test/a.test.ts > parse > splits rows"), as its FAIL line names it: the default
 * reporter lists a file's tests under its " ❯ file (N tests | 1 failed)" line without the file,
 * the verbose one with it. Two files with the same chain are two tests (red team: one file's
 * failure fixed and another's broken read as the same test failing before and after).
 */
export function parseVitest(out: string): TestReport | null {
  const line = /^[ \t]*Tests[ \t]+(.+\(\d+\))[ \t]*$/m.exec(out)?.[1];
  if (!line || !/\bTest Files\b/.test(out)) return null;
  const count = (w: string) => num(new RegExp(`(\\d+) ${w}`).exec(line)?.[1]);
  const r = emptyReport('vitest');
  r.passed = count('passed');
  r.failed = count('failed');
  r.skipped = count('skipped') + count('todo');
  const set = (name: string, outcome: TestOutcome) => {
    if (r.tests.get(name) !== 'fail') r.tests.set(name, outcome);
  };
  let file: string | null = null;
  for (const l of out.split('\n')) {
    const header = /^ [✓❯×↓] ((?:\|[^|]+\| )?\S+) \(\d+ tests?\b/.exec(l);
    if (header) {
      file = header[1]!;
      continue;
    }
    const v = /^\s+([✓×↓]) (.+?)(?: \d+ms)?$/.exec(l);
    if (v && !/\(\d+ tests?/.test(v[2]!)) {
      const outcome = v[1] === '✓' ? 'pass' : v[1] === '×' ? 'fail' : 'skip';
      const named = /^(?:\|[^|]+\| )?\S+\.\w+ > /.test(v[2]!);
      set(named || file === null ? v[2]! : `${file} > ${v[2]!}`, outcome);
    }
    const f = /^\s*FAIL\s+((?:\|[^|]+\| )?\S+ > .+)$/.exec(l);
    if (f) set(f[1]!.trim(), 'fail');
  }
  return r;
}

/** go test: "--- PASS: TestX (0.00s)" (with -v), "--- FAIL: ...", "ok  pkg" / "FAIL pkg". */
export function parseGoTest(out: string): TestReport | null {
  const hasPkg =
    /^(ok|FAIL|---)[ \t]+\S+/m.test(out) && (/^(ok|FAIL)[ \t]+\S+[ \t]+[\d.]+s/m.test(out) || /^--- (PASS|FAIL|SKIP): /m.test(out));
  if (!hasPkg) return null;
  const r = emptyReport('go test');
  // go test prints a package's results, then its "ok"/"FAIL <package>" line. Two packages may
  // have a test of the same name: those are named "<package>.<test>", so neither hides the other.
  const results: { pkg: string | null; name: string; outcome: TestOutcome }[] = [];
  let pending: typeof results = [];
  for (const l of out.split('\n')) {
    const m = /^\s*--- (PASS|FAIL|SKIP): (\S+) \(/.exec(l);
    if (m) {
      pending.push({ pkg: null, name: m[2]!, outcome: m[1] === 'PASS' ? 'pass' : m[1] === 'FAIL' ? 'fail' : 'skip' });
      continue;
    }
    const pkg = /^(?:ok|FAIL)[ \t]+(\S+)[ \t]+(?:[\d.]+s|\(cached\)|\[)/.exec(l);
    if (pkg) {
      for (const t of pending) results.push({ ...t, pkg: pkg[1]! });
      pending = [];
    }
  }
  results.push(...pending);
  const packagesOf = new Map<string, Set<string | null>>();
  for (const t of results) packagesOf.set(t.name, (packagesOf.get(t.name) ?? new Set()).add(t.pkg));
  for (const t of results) {
    const name = (packagesOf.get(t.name)?.size ?? 1) > 1 && t.pkg ? `${t.pkg}.${t.name}` : t.name;
    if (r.tests.get(name) !== 'fail') r.tests.set(name, t.outcome);
  }
  return countTests(r);
}

/** cargo test: "test result: FAILED. 1 passed; 1 failed; 0 ignored; ..." per test binary. */
export function parseCargoTest(out: string): TestReport | null {
  const results = [...out.matchAll(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;/gm)];
  if (results.length === 0) return null;
  const r = emptyReport('cargo test');
  for (const m of results) {
    r.passed += num(m[1]);
    r.failed += num(m[2]);
    r.skipped += num(m[3]);
  }
  for (const m of out.matchAll(/^test (\S+) \.\.\. (ok|FAILED|ignored)$/gm)) {
    r.tests.set(m[1]!, m[2] === 'ok' ? 'pass' : m[2] === 'FAILED' ? 'fail' : 'skip');
  }
  return r;
}

/** ctest: "1/2 Test #1: adds .....   Passed" and "50% tests passed, 1 tests failed out of 2". */
export function parseCtest(out: string): TestReport | null {
  const summary = /^\d+% tests passed, (\d+) tests? failed out of (\d+)/m.exec(out);
  if (!summary) return null;
  const r = emptyReport('ctest');
  for (const m of out.matchAll(/^[ \t]*\d+\/\d+ Test\s+#\d+: (\S+) \.*[ \t]*(\*{3})?(Passed|Failed|Exception|Timeout|Not Run|Skipped)/gm)) {
    r.tests.set(m[1]!, m[3] === 'Passed' ? 'pass' : m[3] === 'Skipped' || m[3] === 'Not Run' ? 'skip' : 'fail');
  }
  const counted = countTests(r);
  const total = num(summary[2]);
  const failed = num(summary[1]);
  return { ...counted, failed, passed: total - failed - counted.skipped, skipped: counted.skipped };
}

/**
 * The plain closing line any test program can print: "N passed, N failed" (", N skipped"
 * may follow; one word and a colon may precede). Names from "ok NAME" / "FAIL NAME" lines.
 */
export function parsePlainSummary(out: string): TestReport | null {
  const m = [...out.matchAll(/^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?[ \t]*$/gm)].pop();
  if (!m) return null;
  const r = emptyReport('plain');
  r.passed = num(m[1]);
  r.failed = num(m[2]);
  r.skipped = num(m[3]);
  for (const t of out.matchAll(/^(ok|FAIL) ([^\s:]+)/gm)) r.tests.set(t[2]!, t[1] === 'ok' ? 'pass' : 'fail');
  return r;
}

/**
 * A TAP stream that stopped before its plan and totals: tape and node-tap print both at the
 * end, so a test that throws outside an assertion kills the process after "ok 1".."not ok N".
 * The results printed so far are sure (a failure named here did fail); the list is not whole.
 */
export function parseTapCutShort(out: string): TestReport | null {
  if (!/^(?:not )?ok 1\b/m.test(out) || /^1\.\.\d+$/m.test(out)) return null;
  const lines = parseTap(`${out}\n1..0`);
  if (!lines) return null;
  const last = [...out.matchAll(/^(?:not )?ok (\d+)\b/gm)].at(-1)!;
  const after = out.slice(last.index);
  const crash = /^(?:Uncaught )?([A-Z]\w*(?:Error|Exception)\b.*)$/m.exec(after)?.[1]?.trim();
  return {
    ...countTests(lines),
    cutShort: `its TAP output stops after test ${last[1]} without a plan${crash ? ` (${crash.slice(0, 200)})` : ''}, so tests after it did not run`,
  };
}

const PARSERS = [
  parseJunitXml,
  parseCargoTest,
  parseGoTest,
  parseCtest,
  parsePytest,
  parseUnittest,
  parseVitest,
  parseJest,
  parseMocha,
  parseAva,
  parseTap,
  parseNodeTest,
  parsePlainSummary,
  parseTapCutShort,
];

/** Tries each framework's parser on the (ANSI-stripped) output, run by run when a command runs several (mixedOutput); null when none recognises it. */
export function parseTestOutput(output: string): TestReport | null {
  return parseRuns(plain(output), PARSERS);
}
