// Diff capture runs on the host after every cell: each test tries to stall it, blow it up or
// crash it with what a cell can leave in the tree. The bounds are asserted as outcomes (the
// result says what was left out), never as timings.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { captureApplicablePatch, captureWorktreeDiff, DEFAULT_DIFF_CAPS } from '../../runner/src/workspace/captureWorktreeDiff.js';
import { makeRepo, worktreeSource } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

function cellJson(args: string[], cmd: string) {
  const r = spawnSync(process.execPath, [RUNNER, 'cell', 'run', '--json', ...args, '--', cmd], {
    encoding: 'utf8',
    timeout: 280_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(r.status, 0, `cell run failed (${r.status}): ${r.stderr.slice(-1500)}`);
  return JSON.parse(r.stdout);
}

describe('diff capture is bounded and never loses the result (each test tries to stall or crash it)', function () {
  this.timeout(300_000);

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  // Hard links to one empty file: the capture lists names, and a busy disk makes 60,000 inodes
  // slow enough to outlast any short cell timeout.
  it('F5: 60,000 new files from one cell: the capture stops at its untracked-file cap and says so', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = cellJson(
        ['--worktree', repo.dir],
        "python3 -c \"import os\nos.mkdir('many')\nopen('many/f0', 'w').close()\nfor i in range(1, 60000): os.link('many/f0', f'many/f{i}')\"",
      );
      assert.equal(r.exit_code, 0, r.output);
      assert.match(r.diff.incomplete, new RegExp(`more than ${DEFAULT_DIFF_CAPS.maxUntracked} untracked files`));
      assert.ok(r.diff.files.length <= DEFAULT_DIFF_CAPS.maxFiles);
      assert.match(r.isolation.warnings.join('\n'), /diff incomplete/);
    } finally {
      repo.cleanup();
    }
  });

  it('F5: a tracked file grown to 2 GiB is named, not hashed or diffed', () => {
    const repo = makeRepo({ 'big.bin': 'small\n', 'a.txt': 'a\n' });
    try {
      const r = cellJson(['--worktree', repo.dir], 'truncate -s 2G big.bin && echo b >> a.txt');
      assert.ok(
        r.diff.omitted.some((o: { path: string; reason: string }) => o.path === 'big.bin' && /changed file larger than/.test(o.reason)),
        JSON.stringify(r.diff.omitted),
      );
      assert.deepEqual(
        r.diff.files.map((f: { path: string }) => f.path),
        ['a.txt'],
      );
    } finally {
      repo.cleanup();
    }
  });

  it('F6: a tracked file replaced by a FIFO does not crash the cell run: the FIFO is removed and reported', () => {
    const repo = makeRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    try {
      const r = cellJson(['--worktree', repo.dir], 'rm a.txt && mkfifo a.txt && echo c >> b.txt');
      assert.deepEqual(r.neutralized, [{ path: 'a.txt', found: 'fifo', action: 'removed' }]);
      assert.equal(existsSync(join(repo.dir, 'a.txt')), false);
      const byPath = Object.fromEntries(r.diff.files.map((f: { path: string; status: string }) => [f.path, f.status]));
      assert.deepEqual(byPath, { 'a.txt': 'deleted', 'b.txt': 'modified' });
    } finally {
      repo.cleanup();
    }
  });

  it('past its deadline the capture stops and says so; past the untracked or hashing budget it names what it left out', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      mkdirSync(join(repo.dir, 'new'));
      for (let i = 0; i < 50; i++) writeFileSync(join(repo.dir, 'new', `f${String(i).padStart(2, '0')}`), 'x'.repeat(600));
      const src = await worktreeSource(repo.dir);
      const late = await captureWorktreeDiff(src, { ...DEFAULT_DIFF_CAPS, deadlineMs: 1 });
      assert.match(late.incomplete ?? '', /deadline/);
      const counted = await captureWorktreeDiff(src, { ...DEFAULT_DIFF_CAPS, maxUntracked: 10 });
      assert.match(counted.incomplete ?? '', /more than 10 untracked files/);
      assert.equal(counted.files.length, 10);
      // (a.txt counts too: its stat changed when the test repository was handed to the cell user)
      const hashed = await captureWorktreeDiff(src, { ...DEFAULT_DIFF_CAPS, hashBytes: 3010 });
      assert.equal(hashed.files.filter((f) => f.path.startsWith('new/')).length, 5);
      assert.equal(hashed.omitted.length, 45);
      assert.match(hashed.incomplete ?? '', /changed content/);
      // What the applicable patch carries is exactly what the review listed.
      const patch = await captureApplicablePatch(src, { ...DEFAULT_DIFF_CAPS, hashBytes: 3010 });
      assert.equal((patch.patch.toString('latin1').match(/^diff --git a\/new\//gm) ?? []).length, 5);
      assert.equal(patch.omitted.length, 45);
    } finally {
      repo.cleanup();
    }
  });
});
