import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { JUNIT_LIMITS, readJunitReports, snapshotJunitReports } from '../../../runner/src/repair/verdicts/junitReports.js';
import { parseJunitXml } from '../../../runner/src/repair/verdicts/junitXml.js';
import { closedToCellUser } from '../../../runner/src/repair/dependencies/detectSharedDeps.js';

const suite = (cls: string, cases: Record<string, 'pass' | 'fail' | 'skip'>) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="${cls}" tests="${Object.keys(cases).length}">\n${Object.entries(cases)
    .map(
      ([name, o]) =>
        `  <testcase classname="${cls}" name="${name}">${o === 'fail' ? '<failure message="no"/>' : o === 'skip' ? '<skipped/>' : ''}</testcase>`,
    )
    .join('\n')}\n</testsuite>\n`;

describe('JUnit XML reports a build tool wrote in the worktree', () => {
  let wt: string;
  let outside: string;
  const none = new Set<string>();
  const write = (rel: string, text: string) => {
    mkdirSync(dirname(join(wt, rel)), { recursive: true });
    writeFileSync(join(wt, rel), text);
  };

  beforeEach(() => {
    wt = mkdtempSync(join(tmpdir(), 'forge-junit-'));
    outside = mkdtempSync(join(tmpdir(), 'forge-junit-outside-'));
  });
  afterEach(() => {
    rmSync(wt, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('merges Maven (root and modules) and Gradle (per task) reports, naming every test', () => {
    write('target/surefire-reports/TEST-a.ATest.xml', suite('a.ATest', { one: 'pass', two: 'fail' }));
    write('core/target/surefire-reports/TEST-c.CTest.xml', suite('c.CTest', { three: 'pass', four: 'skip' }));
    write('app/build/test-results/test/TEST-g.GTest.xml', suite('g.GTest', { five: 'pass' }));
    write('app/build/test-results/integrationTest/TEST-g.ITest.xml', suite('g.ITest', { six: 'fail' }));
    write('target/surefire-reports/a.ATest.txt', 'not a report');
    const r = readJunitReports(wt, none)!;
    assert.equal(r.framework, 'junit');
    assert.deepEqual([r.passed, r.failed, r.skipped], [3, 2, 1]);
    assert.equal(r.tests.get('a.ATest.two'), 'fail');
    assert.equal(r.tests.get('g.ITest.six'), 'fail');
  });

  it('is null when there is no report', () => {
    write('src/Main.java', 'class Main {}');
    assert.equal(readJunitReports(wt, none), null);
  });

  it('counts only reports the cell created or changed: committed or earlier ones are ignored, whatever their mtime', () => {
    write('target/surefire-reports/TEST-old.xml', suite('old.OldTest', { gone: 'fail' }));
    write('target/surefire-reports/TEST-kept.xml', suite('k.KeptTest', { stale: 'fail' }));
    const before = snapshotJunitReports(wt);
    // The cell: one new report, one rewritten; an old report's mtime moved (ctime moves with it).
    write('target/surefire-reports/TEST-now.xml', suite('n.NowTest', { ran: 'pass' }));
    write('target/surefire-reports/TEST-kept.xml', suite('k.KeptTest', { fresh: 'pass' }));
    const r = readJunitReports(wt, before)!;
    assert.deepEqual([...r.tests.keys()].sort(), ['k.KeptTest.fresh', 'n.NowTest.ran']);
    const tomorrow = new Date(Date.now() + 86_400_000);
    utimesSync(join(wt, 'target/surefire-reports/TEST-old.xml'), tomorrow, tomorrow);
    assert.ok(readJunitReports(wt, before)!.tests.has('old.OldTest.gone'), 'a touched report is one the cell changed');
  });

  it('never follows a link out of the worktree: a linked report directory, module or file is not read', () => {
    mkdirSync(join(outside, 'surefire-reports'), { recursive: true });
    writeFileSync(join(outside, 'surefire-reports', 'TEST-x.xml'), suite('x.Outside', { leaked: 'pass' }));
    mkdirSync(join(wt, 'target'));
    symlinkSync(join(outside, 'surefire-reports'), join(wt, 'target', 'surefire-reports'));
    mkdirSync(join(outside, 'mod', 'target'), { recursive: true });
    symlinkSync(join(outside, 'surefire-reports'), join(outside, 'mod', 'target', 'surefire-reports'));
    symlinkSync(join(outside, 'mod'), join(wt, 'linkedmodule'));
    write('core/target/surefire-reports/TEST-real.xml', suite('r.RealTest', { ok: 'pass' }));
    symlinkSync(join(outside, 'surefire-reports', 'TEST-x.xml'), join(wt, 'core/target/surefire-reports/TEST-linked.xml'));
    const r = readJunitReports(wt, none)!;
    assert.deepEqual([...r.tests.keys()], ['r.RealTest.ok']);
  });

  it('skips a FIFO named like a report instead of blocking on it, and a malformed report instead of failing', () => {
    mkdirSync(join(wt, 'target', 'surefire-reports'), { recursive: true });
    execFileSync('mkfifo', [join(wt, 'target', 'surefire-reports', 'TEST-pipe.xml')]);
    write('target/surefire-reports/TEST-bad.xml', '<testsuite><testcase/><testcase>5</testcase><testcase name=');
    write('target/surefire-reports/TEST-real.xml', suite('r.RealTest', { ok: 'pass' }));
    assert.deepEqual([...readJunitReports(wt, none)!.tests.keys()], ['r.RealTest.ok']);
  });

  it('a name that is not UTF-8 (86 bytes of 0xff, 258 once decoded) neither throws nor hides reports (red team, issue 28)', () => {
    mkdirSync(Buffer.concat([Buffer.from(`${wt}/`), Buffer.alloc(86, 0xff)]));
    const moduleDir = Buffer.concat([Buffer.from(`${wt}/`), Buffer.from([0x6d, 0xff])]);
    mkdirSync(Buffer.concat([moduleDir, Buffer.from('/target/surefire-reports')]), { recursive: true });
    const before = snapshotJunitReports(wt);
    writeFileSync(Buffer.concat([moduleDir, Buffer.from('/target/surefire-reports/TEST-m.xml')]), suite('m.MTest', { ran: 'fail' }));
    assert.equal(readJunitReports(wt, before)!.tests.get('m.MTest.ran'), 'fail', 'the module with a raw name is read as itself');
  });

  it('a snapshot cut short trusts no report after it: a committed report behind junk the cell then deletes is not taken (red team, issue 28)', () => {
    write('target/surefire-reports/TEST-forged.xml', suite('f.Forged', { everything: 'pass' }));
    for (let i = 0; i < 30; i++) mkdirSync(join(wt, `junk${i}`));
    const limits = { ...JUNIT_LIMITS, maxEntries: 20 };
    const before = snapshotJunitReports(wt, limits);
    for (let i = 0; i < 30; i++) rmSync(join(wt, `junk${i}`), { recursive: true });
    assert.equal(readJunitReports(wt, before, limits), null);
  });

  it('gives way to the console when the bounds are reached (a partial report would hide regressions)', () => {
    for (let i = 0; i < 5; i++) write(`target/surefire-reports/TEST-${i}.xml`, suite(`t.T${i}`, { a: 'pass' }));
    const limits = { ...JUNIT_LIMITS, maxFiles: 100, maxFileBytes: 50_000 };
    assert.equal(readJunitReports(wt, none, limits)!.tests.size, 5);
    write('target/surefire-reports/TEST-big.xml', suite('big.Big', { a: 'pass' }) + ' '.repeat(60_000));
    assert.equal(readJunitReports(wt, none, limits), null, 'a file over the size bound');
    rmSync(join(wt, 'target/surefire-reports/TEST-big.xml'));
    assert.equal(readJunitReports(wt, none, { ...limits, maxFiles: 3 }), null, 'more files than the bound');
    for (let i = 0; i < 30; i++)
      linkSync(join(wt, 'target/surefire-reports/TEST-0.xml'), join(wt, `target/surefire-reports/TEST-link${i}.xml`));
    assert.equal(readJunitReports(wt, none, { ...limits, maxEntries: 20 }), null, 'more directory entries than the bound');
  });
});

describe('JUnit XML parsing of text the tests wrote', () => {
  it('names outcomes from child elements only; a failure printed inside CDATA or a comment is not one', () => {
    const r = parseJunitXml(`<testsuite>
      <testcase classname="c" name="a"><system-out><![CDATA[<failure> printed by the test]]></system-out></testcase>
      <testcase classname="c" name="b" failure="attribute, not an element"/>
      <testcase classname="c" name="d"><!-- <error/> --><skipped/></testcase>
      <testcase classname="c" name="e"><error type="x"/></testcase>
      <testcase classname="c&amp;co" name="f"/>
    </testsuite>`)!;
    assert.deepEqual(Object.fromEntries(r.tests), { 'c.a': 'pass', 'c.b': 'pass', 'c.d': 'skip', 'c.e': 'fail', 'c&co.f': 'pass' });
  });

  it('a name reported twice counts as failed when either failed', () => {
    const r = parseJunitXml('<testsuite><testcase name="x"><failure/></testcase><testcase name="x"/></testsuite>')!;
    assert.equal(r.tests.get('x'), 'fail');
    assert.equal(r.failed, 1);
  });

  // The suite's timeout is the guard: a quadratic scan of these takes many minutes (the general
  // XML parser this replaced took 25 s for the first alone), the linear one well under a second.
  it('gets through adversarial input (an 8 MiB report of tiny elements, unclosed CDATA openers)', () => {
    const body = '1<b/>'.repeat(Math.floor((8 * 1024 * 1024) / 5));
    assert.equal(parseJunitXml(`<testsuite><testcase name="t">${body}</testcase></testsuite>`)!.tests.get('t'), 'pass');
    parseJunitXml(`<testsuite><testcase name="u">${'<![CDATA['.repeat(500_000)}<!--</testcase></testsuite>`);
    parseJunitXml(`<testsuite>${'<testcase '.repeat(500_000)}`);
  });
});

describe('a shared directory the cells cannot read', () => {
  it('is named with its mode, down to its first level; an open one is not', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-closed-'));
    try {
      mkdirSync(join(dir, 'org'), { mode: 0o750 });
      execFileSync('chmod', ['755', dir]);
      assert.match(closedToCellUser(dir) ?? '', /org \(mode 750\)$/);
      execFileSync('chmod', ['755', join(dir, 'org')]);
      assert.equal(closedToCellUser(dir), null);
      execFileSync('chmod', ['700', dir]);
      assert.match(closedToCellUser(dir) ?? '', /\(mode 700\)$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
