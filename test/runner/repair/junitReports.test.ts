import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { readJunitReports } from '../../../runner/src/repair/verdicts/junitReports.js';
import { closedToCellUser } from '../../../runner/src/repair/dependencies/detectSharedDeps.js';

const suite = (cls: string, cases: Record<string, 'pass' | 'fail' | 'skip'>) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="${cls}" tests="${Object.keys(cases).length}">\n${Object.entries(cases)
    .map(([name, o]) => `  <testcase classname="${cls}" name="${name}">${o === 'fail' ? '<failure message="no"/>' : o === 'skip' ? '<skipped/>' : ''}</testcase>`)
    .join('\n')}\n</testsuite>\n`;

describe('JUnit XML reports a build tool wrote in the worktree', () => {
  let wt: string;
  let outside: string;
  const window = () => ({ startedMs: Date.now() - 60_000, endedMs: Date.now() + 1000 });
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
    const r = readJunitReports(wt, window())!;
    assert.equal(r.framework, 'junit');
    assert.deepEqual([r.passed, r.failed, r.skipped], [3, 2, 1]);
    assert.equal(r.tests.get('a.ATest.two'), 'fail');
    assert.equal(r.tests.get('g.ITest.six'), 'fail');
  });

  it('is null when there is no report', () => {
    write('src/Main.java', 'class Main {}');
    assert.equal(readJunitReports(wt, window()), null);
  });

  it('ignores a report written before the cell started or dated after it ended (stale or planted)', () => {
    write('target/surefire-reports/TEST-old.xml', suite('old.OldTest', { gone: 'fail' }));
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(join(wt, 'target/surefire-reports/TEST-old.xml'), hourAgo, hourAgo);
    write('target/surefire-reports/TEST-future.xml', suite('f.FutureTest', { all: 'pass' }));
    const tomorrow = new Date(Date.now() + 86_400_000);
    utimesSync(join(wt, 'target/surefire-reports/TEST-future.xml'), tomorrow, tomorrow);
    write('target/surefire-reports/TEST-now.xml', suite('n.NowTest', { ran: 'pass' }));
    const r = readJunitReports(wt, window())!;
    assert.deepEqual([...r.tests.keys()], ['n.NowTest.ran']);
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
    const r = readJunitReports(wt, window())!;
    assert.deepEqual([...r.tests.keys()], ['r.RealTest.ok']);
  });

  it('skips a FIFO named like a report instead of blocking on it', () => {
    mkdirSync(join(wt, 'target', 'surefire-reports'), { recursive: true });
    execFileSync('mkfifo', [join(wt, 'target', 'surefire-reports', 'TEST-pipe.xml')]);
    write('target/surefire-reports/TEST-real.xml', suite('r.RealTest', { ok: 'pass' }));
    assert.deepEqual([...readJunitReports(wt, window())!.tests.keys()], ['r.RealTest.ok']);
  });

  it('reads within its bounds: files over the size cap and beyond the file count are left out', () => {
    for (let i = 0; i < 5; i++) write(`target/surefire-reports/TEST-${i}.xml`, suite(`t.T${i}`, { a: 'pass' }));
    write('target/surefire-reports/TEST-big.xml', suite('big.Big', { a: 'pass' }) + ' '.repeat(10_000));
    const bySize = readJunitReports(wt, window(), { maxModules: 10, maxFiles: 100, maxFileBytes: 5_000, maxTotalBytes: 1_000_000 })!;
    assert.equal(bySize.tests.size, 5);
    assert.equal(bySize.tests.has('big.Big.a'), false);
    assert.equal(readJunitReports(wt, window(), { maxModules: 10, maxFiles: 100, maxFileBytes: 50_000, maxTotalBytes: 1_000_000 })!.tests.has('big.Big.a'), true);
    assert.equal(readJunitReports(wt, window(), { maxModules: 10, maxFiles: 3, maxFileBytes: 50_000, maxTotalBytes: 1_000_000 })!.tests.size, 3);
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
