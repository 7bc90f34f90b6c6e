// The hazard walk after a cell is complete or the worktree is not given back: a cell that
// first leaves more entries than the walk checks must not leave a setuid copy of a shell or
// a FIFO where another local user can reach them (a root runner's cells run as uid 65532,
// which owns the attempt worktrees: a setuid copy runs as that user for whoever starts it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { HAZARD_SCAN_LIMITS } from '../../runner/src/hostguard/neutralizeHazards.js';
import { git, makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const CAP = HAZARD_SCAN_LIMITS.maxEntries;

function cli(args: string[]) {
  return spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', timeout: 560_000, maxBuffer: 64 * 1024 * 1024 });
}

/**
 * What a hostile repository's command does in its cell: opens its worktree to everyone, makes
 * more entries than the walk checks in `junk/` (the walk counts names, so hard links to a few
 * empty files do: a fraction of the disk work of a million inodes on a busy test machine, and
 * ext4 allows 65,000 links per file; the walk visits a directory in the order the kernel lists it), then a setuid shell and a FIFO in a directory listed after them.
 */
const ATTACK = `/usr/bin/python3 -c "
import os, shutil
os.chmod('.', 0o755)
os.makedirs('junk/big')
for i in range(${CAP + 50_000}):
    if i % 60000 == 0:
        first = 'junk/big/%d' % i
        os.close(os.open(first, os.O_CREAT | os.O_WRONLY, 0o644))
    else:
        os.link(first, 'junk/big/%d' % i)
i, h = 0, None
while h is None and i < 1000:
    os.mkdir('junk/h%d' % i)
    names = os.listdir('junk')
    after = [n for n in names[names.index('big') + 1:] if n.startswith('h')]
    h = after[0] if after else None
    i += 1
shutil.copy('/bin/sh', 'junk/%s/suidsh' % h)
os.chmod('junk/%s/suidsh' % h, 0o6755)
os.mkfifo('junk/%s/fifo' % h)
print('HAZARDS junk/%s' % h)
"`;

/**
 * Runs `argv` as an unprivileged local user that is neither root nor the cell user. Through a
 * shell: setpriv keeps root's capabilities until its own execve, so a path it execs directly
 * is looked up with root's rights (that would reach a directory of mode 0700).
 */
function asOtherUser(argv: string[]) {
  return spawnSync('setpriv', ['--reuid', '1234', '--regid', '1234', '--clear-groups', '/bin/sh', '-c', 'exec "$0" "$@"', ...argv], {
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('the hazard walk after a cell is complete, or the worktree is withheld (each test performs the attack)', function () {
  this.timeout(600_000);
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    requireFeature(this, process.getuid?.() === 0, 'needs a root runner (its cells run as the dedicated cell user)');
    requireFeature(this, existsSync(RUNNER), 'needs npm run build (dist/runner.js)');
  });

  it(`cell run: more than ${CAP} entries, then a setuid shell and a FIFO: the cell fails in one line, no diff, and no other user reaches them`, function () {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = cli(['cell', 'run', '--json', '--worktree', repo.dir, '--', ATTACK]);
      const result = JSON.parse(r.stdout) as { output: string; worktree_withheld?: string | null; diff: unknown };
      const where = /HAZARDS (\S+)/.exec(result.output)?.[1];
      assert.ok(where, `the attack ran to its end: ${result.output.slice(-500)}`);
      const suid = join(repo.dir, where, 'suidsh');
      // Another local user must not reach the setuid copy (stat or exec) nor the FIFO.
      const stat = asOtherUser(['stat', '-c', '%a %u', suid]);
      assert.notEqual(stat.status, 0, `uid 1234 can stat the setuid copy the cell left: ${stat.stdout}`);
      const exec = asOtherUser([suid, '-p', '-c', 'id -u']);
      assert.notEqual(exec.stdout.trim(), '65532', 'uid 1234 ran a shell as the cell user');
      assert.notEqual(exec.status, 0, `uid 1234 ran the setuid copy: ${exec.stdout}${exec.stderr}`);
      assert.notEqual(asOtherUser(['test', '-p', join(repo.dir, where, 'fifo')]).status, 0, 'uid 1234 reaches the FIFO');
      // The cell fails: non-zero, one line naming the problem and the way out, no diff.
      assert.notEqual(r.status, 0, 'a withheld worktree must fail the command');
      assert.match(result.worktree_withheld ?? '', new RegExp(`the cell left more than ${CAP} entries in the worktree`));
      assert.equal(result.diff, null, 'no diff is read from a withheld tree');
      const lines = r.stderr.split('\n').filter((l) => /more than \d+ entries/.test(l));
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0]!, new RegExp(`remove ${repo.dir} \\(rm -rf\\)`));
      const top = statSync(repo.dir);
      assert.equal(top.mode & 0o777, 0o700);
      assert.equal(top.uid, 0);
    } finally {
      spawnSync('rm', ['-rf', repo.dir]);
    }
  });

  it(`fix run: an attempt whose command leaves more than ${CAP} entries fails with that reason and its worktree is gone`, function () {
    // The junk is ignored by the base commit's .gitignore, so the diff alone would not stop it.
    const repo = makeRepo({
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      '.gitignore': 'junk/\n',
    });
    const scratch = mkdtempSync(join(tmpdir(), 'forge-hazard-replay-'));
    try {
      const replay = join(scratch, 'replay.json');
      const turns = [
        { tool_calls: [{ name: 'run_command', arguments: { command: ATTACK } }] },
        { tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' } }] },
        { tool_calls: [{ name: 'finish', arguments: { summary: 's' } }] },
      ];
      writeFileSync(replay, JSON.stringify({ version: 1, attempts: [turns] }));
      const r = cli([
        'fix',
        '--repo',
        repo.dir,
        '--provider',
        'host',
        '--attempts',
        '1',
        '--issue-text',
        'add() subtracts',
        '--model',
        `replay:${replay}`,
        '--test-cmd',
        'python3 -m pytest -q',
        '--json',
      ]);
      assert.equal(r.status, 1, `not fixed (exit 1): exit ${r.status}: ${r.stderr.slice(-800)}`);
      const report = JSON.parse(r.stdout) as { status: string; winner: unknown; attempts: { error: string | null }[] };
      assert.match(report.attempts[0]?.error ?? '', new RegExp(`the cell left more than ${CAP} entries in the worktree`));
      assert.equal(report.winner, null);
      const cells = join(repo.dir, '.git', 'forge-cells');
      assert.deepEqual(existsSync(cells) ? readdirSync(cells) : [], [], 'the withheld worktree is removed');
      assert.equal(git(repo.dir, 'branch', '--list', 'forge/*').trim(), '', 'no attempt branch is kept');
    } finally {
      spawnSync('rm', ['-rf', repo.dir]);
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
