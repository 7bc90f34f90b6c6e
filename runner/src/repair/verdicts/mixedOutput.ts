import { combineReports, type TestReport } from './testReport.js';

export type Parser = (text: string) => TestReport | null;

/**
 * Lines that open a framework's run, where it prints one: the lines from there to the first
 * one its parser needs are still that run's (a vitest test's subprocess may print TAP of its
 * own, failures it expects included, between " RUN  v3" and the first file's results).
 */
const RUN_OPENS: Readonly<Record<string, RegExp>> = {
  vitest: /^ RUN {2}v\d/,
  pytest: /^=+ test session starts =+$/,
  cargo: /^running \d+ tests?$/,
};

/** How deep output is split: a command rarely runs more than three frameworks in a row. */
const MAX_RUNS = 4;

/**
 * Pure: the report of a command's output that may hold several frameworks' runs one after
 * the other (`node --test; python3 -m unittest`, whose exit status is the last one's). The
 * first parser that knows the output reads it; the lines before and after the stretch that
 * parser needs for its report are read again for another framework's run, and what they
 * show is added. A run inside another's stretch (TAP a vitest test's subprocess prints, and
 * expects to fail) stays that run's output, not a second run.
 */
export function parseRuns(text: string, parsers: readonly Parser[]): TestReport | null {
  return readRuns(text.split('\n'), parsers, MAX_RUNS);
}

function readRuns(lines: readonly string[], parsers: readonly Parser[], budget: number): TestReport | null {
  const text = lines.join('\n');
  for (const parse of parsers) {
    const report = parse(text);
    if (!report) continue;
    const others = parsers.filter((p) => p !== parse).map((p) => ({ parse: p, report: p(text) }));
    let runs = [report];
    // Looking for the stretch costs a few dozen reads: only when another framework shows at all.
    if (budget > 1 && others.some((o) => isRun(o.report, report))) {
      const { start, end } = stretch(lines, parse, report);
      const around = (part: readonly string[]) => {
        const r = part.some((l) => l.trim() !== '') ? readRuns(part, parsers, budget - 1) : null;
        return isRun(r, report) ? [r] : [];
      };
      runs = [...around(lines.slice(0, start)), report, ...around(lines.slice(end))];
    }
    return withMissedFailures(runs, others, lines, parse, report);
  }
  return null;
}

/**
 * Failures add up: nothing a command prints can take one away. Another framework whose own
 * totals show a failure anywhere in the output is a run too, even where the first parser's
 * stretch took in its lines (mocha reads AVA's "✔" lines as its own: `ava; mocha`); a program's
 * plain "N passed, N failed" line counts its failures, and names those it names (`node cli.js;
 * node --test`: the exit status is the last one's). Only a run inside a framework's own run
 * (the TAP a vitest test's subprocess prints, failures it expects included) is that run's output.
 */
function withMissedFailures(
  runs: TestReport[],
  others: readonly { parse: Parser; report: TestReport | null }[],
  lines: readonly string[],
  parse: Parser,
  first: TestReport,
): TestReport {
  const all = [...runs];
  const plainFailures: TestReport[] = [];
  let region: { start: number; end: number } | null | undefined;
  for (const o of others) {
    const r = o.report;
    if (!r || !(r.failed > 0 || [...r.tests.values()].includes('fail'))) continue;
    if (all.some((run) => sharesFramework(run, r))) continue;
    if (r.framework === 'plain') {
      plainFailures.push(r);
      continue;
    }
    if (region === undefined) region = ownRegion(lines, parse, first);
    if (region) {
      const inner = stretch(lines, o.parse, r);
      if (inner.start > region.start && inner.end <= region.end) continue;
    }
    all.push(r);
  }
  const combined = all.length === 1 ? all[0]! : combineReports(all);
  if (plainFailures.length === 0) return combined;
  const tests = new Map(combined.tests);
  for (const p of plainFailures) for (const [name, outcome] of p.tests) if (outcome === 'fail') tests.set(name, 'fail');
  return { ...combined, tests, failed: Math.max(combined.failed, ...plainFailures.map((p) => p.failed)) };
}

/**
 * Where a framework's one run is, from the line that opens it (vitest's " RUN  v3") to the end
 * of what its parser reads: output there is that run's (a test's subprocess printing TAP), or
 * null. Only one opening line counts: with two (`pytest a; mocha; pytest b`) or none (a
 * parser that reads another framework's "✓" lines as its own), the stretch is no run's own
 * (red team 7: mocha's failure between two pytest runs, jest's before vitest's, were dropped).
 */
function ownRegion(lines: readonly string[], parse: Parser, report: TestReport): { start: number; end: number } | null {
  const opens = RUN_OPENS[report.framework];
  if (!opens) return null;
  const { end } = stretch(lines, parse, report);
  const openers = lines.slice(0, end).flatMap((l, i) => (opens.test(l) ? [i] : []));
  return openers.length === 1 ? { start: openers[0]!, end } : null;
}

/**
 * The lines [start, end) the parser needs to read the same report: the shortest prefix and
 * the shortest suffix that still give it, found by bisection (a parser reads a prefix of its
 * run as less than its run, and lines of another's as nothing of its own).
 */
function stretch(lines: readonly string[], parse: Parser, report: TestReport): { start: number; end: number } {
  const same = (part: readonly string[]) => sameReport(parse(part.join('\n')), report);
  let lo = 0;
  let hi = lines.length;
  // Invariant: lines[0, hi) reads the same; lines[0, lo) does not (or lo is 0).
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (same(lines.slice(0, mid))) hi = mid;
    else lo = mid + 1;
  }
  const end = hi;
  lo = 0;
  hi = end;
  // Largest start with lines[start, end) still the same report.
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (same(lines.slice(mid, end))) lo = mid;
    else hi = mid - 1;
  }
  let start = lo;
  const opens = RUN_OPENS[report.framework];
  if (opens) {
    for (let i = start; i >= 0; i--) {
      if (opens.test(lines[i] ?? '')) {
        start = i;
        break;
      }
    }
  }
  return { start, end };
}

/**
 * Whether `r` is another framework's run beside `of`. A bare "N passed, N failed" line is the
 * summary any program prints of its own run (a C program after its TAP), not a second run; a
 * run that names and counts nothing adds nothing.
 */
function isRun(r: TestReport | null, of: TestReport): r is TestReport {
  return (
    r !== null &&
    !sharesFramework(r, of) &&
    !r.framework.split(' + ').includes('plain') &&
    r.passed + r.failed + r.skipped + r.tests.size > 0
  );
}

function sameReport(a: TestReport | null, b: TestReport): boolean {
  if (!a || a.framework !== b.framework || a.passed !== b.passed || a.failed !== b.failed || a.skipped !== b.skipped) return false;
  if (a.cutShort !== b.cutShort || a.tests.size !== b.tests.size) return false;
  for (const [name, outcome] of a.tests) if (b.tests.get(name) !== outcome) return false;
  return true;
}

/** Two reports of one framework are one run read twice (tape's streams add up in its parser). */
function sharesFramework(a: TestReport, b: TestReport): boolean {
  const parts = (r: TestReport) => new Set(r.framework.split(' + '));
  const pb = parts(b);
  return [...parts(a)].some((f) => pb.has(f));
}
