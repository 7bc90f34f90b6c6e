import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../../runner/src/cells/bubblewrapProbe.js';
import { handOverToCellUser } from '../../../runner/src/hostguard/cellUser.js';
import { FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { git } from '../../helpers/gitRepo.js';
import { edit, npmPackage } from '../../helpers/fixCli.js';
import { requireFeature } from '../../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

const FILES = {
  'package.json': npmPackage('calc', { test: 'node run-tests.js' }),
  'calc.js': 'exports.add = (a, b) => a - b;\n',
  'notes.txt': 'start\n',
  'run-tests.js':
    "const { add } = require('./calc.js');\nconst ok = add(2, 2) === 4;\nconsole.log(ok ? 'ok add' : 'FAIL add');\nconsole.log(`${ok ? 1 : 0} passed, ${ok ? 0 : 1} failed`);\nprocess.exit(ok ? 0 : 1);\n",
};

/** `fix` with a replay whose turns carry usage figures, on host cells, its outputs in --out. */
function fixWithUsage(attempts: unknown[][], args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'forge-usage-'));
  const repo = join(dir, 'repo');
  const out = join(dir, 'out');
  for (const [rel, content] of Object.entries(FILES)) {
    mkdirSync(join(repo, rel, '..'), { recursive: true });
    writeFileSync(join(repo, rel), content);
  }
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  handOverToCellUser(repo);
  const replay = join(dir, 'replay.json');
  writeFileSync(replay, JSON.stringify({ version: 1, attempts }));
  const r = spawnSync(
    process.execPath,
    [
      RUNNER,
      'fix',
      '--repo',
      repo,
      '--issue-text',
      'add is wrong',
      '--provider',
      'host',
      '--model',
      `replay:${replay}`,
      '--out',
      out,
      ...args,
    ],
    { encoding: 'utf8', timeout: 240_000 },
  );
  const report = (() => {
    try {
      return FixReportSchema.parse(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')));
    } catch {
      return null;
    }
  })();
  const summary = (() => {
    try {
      return readFileSync(join(out, 'summary.md'), 'utf8');
    } catch {
      return '';
    }
  })();
  return { ...r, report, summary, repo, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const fixTurn = (input: number, output: number) => ({ tool_calls: [edit('calc.js', 'a - b', 'a + b')], usage: { input, output } });
const noteTurn = (n: number, input: number, output: number) => ({
  tool_calls: [edit('notes.txt', n === 0 ? 'start' : `step ${n - 1}`, `step ${n}`)],
  usage: { input, output },
});
const finish = (input: number, output: number) => ({
  tool_calls: [{ name: 'finish', arguments: { summary: 'done' } }],
  usage: { input, output },
});

describe('time and tokens per attempt and run, and token budgets (issue 31)', function () {
  this.timeout(300_000);
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  it("report.json, summary.md and the printed table carry each attempt's time, turns, input and output tokens; the cost only with --price", () => {
    // Attempt 0 fixes it in 2 turns (1000+200, 1500+100 tokens); attempt 1 plays a turn without usage figures.
    const r = fixWithUsage(
      [
        [fixTurn(1000, 200), finish(1500, 100)],
        [{ tool_calls: [edit('calc.js', 'a - b', 'a + b')] }, finish(10, 5)],
      ],
      ['--attempts', '2', '--price', 'input=3,output=15'],
    );
    try {
      assert.equal(r.status, 0, r.stderr);
      const [a0, a1] = r.report!.attempts;
      assert.deepEqual(
        { turns: a0!.usage!.turns, input: a0!.usage!.input_tokens, output: a0!.usage!.output_tokens, unknown: a0!.usage!.unknown_turns },
        { turns: 2, input: 2500, output: 300, unknown: 0 },
      );
      assert.equal(a0!.tokens, 2800);
      // 2500 * 3 / 1M + 300 * 15 / 1M
      assert.equal(a0!.usage!.cost, 0.012);
      // The two make the same change: one verdict cell serves both, so which attempt's cell time it is varies.
      assert.ok(a0!.usage!.wall_ms! > 0 && a0!.usage!.cell_ms + a1!.usage!.cell_ms > 0, JSON.stringify([a0!.usage, a1!.usage]));
      for (const a of [a0!, a1!]) assert.ok(a.usage!.wall_ms! >= a.usage!.cell_ms, JSON.stringify(a.usage));
      // A turn without figures is unknown, not 0.
      assert.equal(a1!.usage!.unknown_turns, 1);
      assert.equal(a1!.usage!.input_tokens, 10);
      const run = r.report!.usage!;
      assert.equal(run.input_tokens, 2510);
      assert.equal(run.output_tokens, 305);
      assert.equal(run.turns, 4);
      assert.ok(run.cell_ms >= a0!.usage!.cell_ms + a1!.usage!.cell_ms, 'the run counts the baseline and ground truth cells too');
      assert.match(r.summary, /\| time \| tokens \|/);
      assert.match(r.summary, /2\.5k in \/ 300 out, cost ~0\.01/);
      assert.match(r.summary, /\+1 turn\(s\) unknown/);
      assert.match(r.summary, /Run: .*4 turns, 2\.5k in \/ 305 out/);
      assert.match(r.stdout, /attempt\s+result\s+time\s+cells\s+turns\s+tokens\s+cost/);
      assert.match(r.stdout, /^0\s+green\s+\S+ s\s+\S+ s\s+2\s+2\.5k in \/ 300 out\s+~0\.01/m);
    } finally {
      r.cleanup();
    }
  });

  it('without --price no cost is estimated', () => {
    const r = fixWithUsage([[fixTurn(100, 20), finish(100, 20)]], ['--attempts', '1']);
    try {
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.report!.attempts[0]!.usage!.cost, null);
      assert.equal(r.report!.usage!.cost, null);
      assert.doesNotMatch(r.summary, /cost/);
    } finally {
      r.cleanup();
    }
  });

  it('an attempt over --max-tokens stops as "budget": judged, its diff and branch kept; the run budget is shared by the attempts', () => {
    // Attempt 0 fixes the bug then keeps editing notes; 3000 tokens a turn against --max-tokens 5000:
    // the check before its third turn finds 6000 spent and stops it.
    const spender = [fixTurn(2500, 500), noteTurn(0, 2500, 500), noteTurn(1, 2500, 500), noteTurn(2, 2500, 500), finish(1, 1)];
    const r = fixWithUsage([spender], ['--attempts', '1', '--max-tokens', '5000']);
    try {
      assert.equal(r.report?.attempts.length, 1, r.stderr);
      const a = r.report!.attempts[0]!;
      assert.equal(a.status, 'budget', r.stderr);
      assert.equal(a.stop, 'tokens');
      assert.equal(a.turns, 2);
      assert.equal(a.usage!.input_tokens + a.usage!.output_tokens, 6000);
      assert.equal(a.error, null);
      // Judged like a max_turns stop: its tests ran on what it made.
      assert.ok(a.verdict, 'its tests ran on what it produced');
      assert.ok(a.diff_size > 0);
      assert.match(r.stderr, /attempt 0: stopped for its budget after 2 turns: its --max-tokens 5000 spent/);
      assert.match(r.summary, /\| 0 \| 0 \| budget \(its tokens spent\), tests /);
    } finally {
      r.cleanup();
    }
    // Two attempts share --max-run-tokens 7000 and each turn costs 3000: once 7000 are spent no
    // attempt starts another turn. They run side by side, so a turn each may start before either
    // has paid: three or four turns between them, never all eight.
    const shared = fixWithUsage(
      [
        [noteTurn(0, 2500, 500), noteTurn(1, 2500, 500), noteTurn(2, 2500, 500), finish(1, 1)],
        [noteTurn(0, 2500, 500), noteTurn(1, 2500, 500), noteTurn(2, 2500, 500), finish(1, 1)],
      ],
      ['--attempts', '2', '--max-run-tokens', '7000'],
    );
    try {
      assert.ok(shared.report, shared.stderr);
      for (const b of shared.report!.attempts) {
        assert.equal(b.status, 'budget', shared.stderr);
        assert.equal(b.stop, 'run_tokens');
      }
      const turns = shared.report!.attempts.reduce((n, b) => n + b.turns, 0);
      assert.ok(turns === 3 || turns === 4, `turns ${turns}`);
      assert.equal(shared.report!.usage!.input_tokens + shared.report!.usage!.output_tokens, turns * 3000);
      // Their work is kept on their branches, not removed with the other worktrees.
      const branches = git(shared.repo, 'branch', '--list', 'forge/attempt/*');
      assert.match(branches, /forge\/attempt\/\S+-a[01]/, shared.stderr);
      assert.match(shared.summary, /budget \(the run's tokens spent\)/);
    } finally {
      shared.cleanup();
    }
  });
});
