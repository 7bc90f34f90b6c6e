// A second red-team pass on the host-side steps (found after the first fixes): git data a cell
// plants and a later run would trust, bytes that are not UTF-8, a .forge link, trees deeper
// than PATH_MAX, content hidden as "binary", and input refused only after the work.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { rememberCheckoutOwners } from '../../runner/src/hostguard/checkoutOwnership.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../runner/src/workspace/attemptWorktree.js';
import { captureApplicablePatch, captureWorktreeDiff, commitWorktreeChanges } from '../../runner/src/workspace/captureWorktreeDiff.js';
import { dockerUnavailable, TEST_IMAGES } from '../helpers/docker.js';
import { git, makeRepo, worktreeSource } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const ROOT = process.getuid?.() === 0;

function cli(args: string[]) {
  return spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', timeout: 280_000, maxBuffer: 64 * 1024 * 1024 });
}
function cellJson(worktree: string, cmd: string, extra: string[] = []) {
  const r = cli(['cell', 'run', '--json', '--worktree', worktree, ...extra, '--', cmd]);
  assert.equal(r.status, 0, `cell run failed (${r.status}): ${r.stderr.slice(-800)}`);
  return JSON.parse(r.stdout);
}
const pyRepo = () =>
  makeRepo({
    'calc.py': 'def add(a, b):\n    return a - b\n',
    'test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n',
  });
function replay(dir: string, turns: unknown[]): string {
  const file = join(dir, 'replay.json');
  writeFileSync(file, JSON.stringify({ version: 1, attempts: [turns] }));
  return `replay:${file}`;
}
const finish = { tool_calls: [{ name: 'finish', arguments: { summary: 's' } }] };
const fixAdd = {
  tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' } }],
};
function fix(repo: string, model: string, extra: string[] = []) {
  return cli([
    'fix',
    '--repo',
    repo,
    '--provider',
    'host',
    '--attempts',
    '1',
    '--issue-text',
    'add() subtracts',
    '--model',
    model,
    '--test-cmd',
    'python3 -m pytest -q',
    '--json',
    ...extra,
  ]);
}
const forgeBranches = (repo: string) =>
  git(repo, 'branch', '--list', 'forge/*')
    .split('\n')
    .map((l) => l.replace(/^[*+]?\s*/, ''))
    .filter(Boolean);

/** Baked images are per repository: a test removes the ones it made. */
function removeBakedImage(bakeJson: string): void {
  try {
    spawnSync('docker', ['rmi', '-f', (JSON.parse(bakeJson) as { image: string }).image], { stdio: 'ignore' });
  } catch {
    /* nothing was baked */
  }
}

/** An index (version 2) holding one entry named `path`: what git itself would never write. */
function craftedIndex(path: string, sha: string): Buffer {
  const name = Buffer.from(path);
  const fixed = Buffer.alloc(62);
  fixed.writeUInt32BE(0o100644, 24);
  Buffer.from(sha, 'hex').copy(fixed, 40);
  fixed.writeUInt16BE(Math.min(name.length, 0xfff), 60);
  const entryLength = 62 + name.length;
  const padded = Buffer.alloc(Math.ceil((entryLength + 1) / 8) * 8 - 62);
  name.copy(padded);
  const header = Buffer.from('DIRC\0\0\0\x02\0\0\0\x01', 'latin1');
  const body = Buffer.concat([header, fixed, padded]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

describe('host-side steps, second red-team pass (each test tries what broke once)', function () {
  this.timeout(300_000);
  let scratch: string;
  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    scratch = mkdtempSync(join(tmpdir(), 'forge-hoststeps-'));
  });
  after(() => scratch && rmSync(scratch, { recursive: true, force: true }));

  it("a repository a cell planted is never trusted later as the user's (a root runner refuses git data of the cell user)", function () {
    requireFeature(this, ROOT, 'needs a root runner (CI runs as root)');
    const repo = pyRepo();
    const marker = join(tmpdir(), `forge-planted-${process.pid}`);
    try {
      cellJson(
        repo.dir,
        [
          'mkdir pkg && cd pkg && git init -q',
          'printf "def add(a, b):\\n    return a - b\\n" > calc.py && printf "from calc import add\\ndef test_add():\\n    assert add(2, 3) == 5\\n" > test_calc.py',
          'echo "* filter=x" > .gitattributes',
          `git config filter.x.smudge "sh -c \\"touch ${marker}; cat\\"" && git config filter.x.clean "sh -c \\"touch ${marker}; cat\\""`,
          'git -c filter.x.clean=cat add . && git -c filter.x.clean=cat -c user.email=a@b -c user.name=a commit -qm i',
        ].join(' && '),
      );
      const r = fix(join(repo.dir, 'pkg'), replay(scratch, [fixAdd, finish]));
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /a cell made this git data/);
      const again = cli(['cell', 'run', '--worktree', join(repo.dir, 'pkg'), '--', 'true']);
      assert.equal(again.status, 2, again.stderr);
      assert.equal(existsSync(marker), false, 'a planted filter ran on the host');
    } finally {
      rmSync(marker, { force: true });
      repo.cleanup();
    }
  });

  it('an index naming a host path (/etc/hostname, ../x) is dropped, never used to read host files', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const empty = git(repo.dir, 'hash-object', '-w', '--stdin').trim();
      for (const bad of ['/etc/hostname', '../../../../../../etc/hostname', 'x/.git/config']) {
        writeFileSync(join(repo.dir, '.git', 'index'), craftedIndex(bad, empty));
        const diff = await captureWorktreeDiff(await worktreeSource(repo.dir));
        assert.ok(!diff.files.some((f) => f.path.includes('hostname') || f.path.includes('.git')), JSON.stringify(diff.files));
        assert.doesNotMatch(diff.patch, new RegExp(readFileSync('/etc/hostname', 'utf8').trim() || 'no-hostname'));
      }
    } finally {
      repo.cleanup();
    }
  });

  it('a file that is not UTF-8 reaches the branch, winner.diff and ground truth as the same bytes', function () {
    const repo = pyRepo();
    const out = join(scratch, 'latin1-out');
    try {
      // Latin-1 source: the byte 0xE9 alone is not UTF-8 (a decode would make it U+FFFD).
      const source = Buffer.concat([
        Buffer.from("# -*- coding: latin-1 -*-\ndef add(a, b):\n    marker = '"),
        Buffer.from([0xe9]),
        Buffer.from("'\n    return a + b\n"),
      ]);
      const model = replay(scratch, [
        { tool_calls: [{ name: 'run_command', arguments: { command: `echo ${source.toString('base64')} | base64 -d > calc.py` } }] },
        finish,
      ]);
      const r = fix(repo.dir, model, ['--out', out]);
      assert.equal(r.status, 0, r.stderr.slice(-1500));
      const diff = readFileSync(join(out, 'winner.diff'));
      assert.ok(diff.includes(Buffer.from([0xe9])), 'winner.diff lost the byte');
      assert.ok(!diff.includes(Buffer.from([0xef, 0xbf, 0xbd])), 'winner.diff carries U+FFFD instead of the byte');
      const branch = forgeBranches(repo.dir)[0]!;
      const committed = spawnSync('git', ['-c', 'safe.directory=*', 'show', `${branch}:calc.py`], { cwd: repo.dir }).stdout as Buffer;
      // Applying winner.diff to the base gives exactly what the branch holds.
      const check = mkdtempSync(join(scratch, 'apply-'));
      git(repo.dir, 'worktree', 'add', '-q', '--detach', check, 'HEAD');
      spawnSync('git', ['-c', 'safe.directory=*', 'apply', join(out, 'winner.diff')], { cwd: check });
      assert.deepEqual(readFileSync(join(check, 'calc.py')), committed);
      git(repo.dir, 'worktree', 'remove', '--force', check);
    } finally {
      repo.cleanup();
    }
  });

  it('a .forge link a cell made redirects nothing: attempts live in .git/forge-cells, bake refuses to write or read through links', async function () {
    const repo = pyRepo();
    const elsewhere = mkdtempSync(join(scratch, 'elsewhere-'));
    const victim = join(scratch, 'victim');
    try {
      cellJson(repo.dir, `ln -s ${elsewhere} .forge`);
      const r = fix(repo.dir, replay(scratch, [fixAdd, finish]), ['--allow-dirty']);
      assert.equal(r.status, 0, r.stderr.slice(-800));
      assert.deepEqual(readdirSync(elsewhere), []);
      if (await dockerUnavailable(TEST_IMAGES.busybox)) return;
      // The record of a bake is not written through a link a cell planted...
      rmSync(join(repo.dir, '.forge'));
      writeFileSync(victim, 'root only\n', { mode: 0o600 });
      cellJson(repo.dir, `mkdir -p .forge && ln -s ${victim} .forge/bake.json`);
      const bake = cli(['bake', '--repo', repo.dir, '--base', TEST_IMAGES.busybox, '--no-install', '--json']);
      removeBakedImage(bake.stdout);
      assert.equal(readFileSync(victim, 'utf8'), 'root only\n', 'bake wrote through a link');
      assert.notEqual(bake.status, 3, bake.stderr);
      // ...nor are the files it copies into the image read through one.
      const node = makeRepo({ 'package.json': '{"name":"x","version":"1.0.0"}\n', 'package-lock.json': '{}\n' });
      try {
        cellJson(node.dir, `rm package-lock.json && ln -s ${victim} package-lock.json`);
        const leak = cli(['bake', '--repo', node.dir, '--base', TEST_IMAGES.busybox, '--no-install', '--json']);
        removeBakedImage(leak.stdout);
        assert.equal(leak.status, 0, leak.stderr);
        assert.ok(
          !(JSON.parse(leak.stdout) as { lockfiles: string[] }).lockfiles.includes('package-lock.json'),
          'a linked lockfile was copied into the image',
        );
      } finally {
        node.cleanup();
      }
    } finally {
      repo.cleanup();
    }
  });

  it('file names that are not UTF-8: hazards under them are neutralized; changes under them are named and never carried (review, branch, apply agree)', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = cellJson(
        repo.dir,
        'mkfifo "$(printf \'fifo\\377\')"; cp /bin/true "$(printf \'suid\\377\')"; chmod 4755 "$(printf \'suid\\377\')"; echo x > "$(printf \'n\\351.py\')"',
      );
      assert.deepEqual(r.neutralized.map((n: { path: string; found: string }) => `${n.path}:${n.found}`).sort(), [
        'fifo\\xff:fifo',
        'suid\\xff:setid',
      ]);
      assert.ok(!r.diff.files.some((f: { path: string }) => f.path.startsWith('n')), JSON.stringify(r.diff.files));
      assert.ok(
        r.diff.omitted.some((o: { path: string; reason: string }) => o.path === 'n\\xe9.py' && /not valid UTF-8/.test(o.reason)),
        JSON.stringify(r.diff.omitted),
      );
    } finally {
      repo.cleanup();
    }
    const py = pyRepo();
    try {
      const plant = {
        tool_calls: [
          {
            name: 'run_command',
            arguments: {
              command: 'd=$(printf \'x\\377\'); mkdir "$d" && echo \'open("/tmp/planted-by-conftest", "w")\' > "$d/conftest.py"',
            },
          },
        ],
      };
      const run = fix(py.dir, replay(scratch, [fixAdd, plant, finish]), ['--apply']);
      assert.equal(run.status, 0, run.stderr.slice(-800));
      const report = JSON.parse(run.stdout);
      assert.ok(
        report.attempts[0].omitted.some((o: { reason: string }) => /not valid UTF-8/.test(o.reason)),
        JSON.stringify(report.attempts[0]),
      );
      assert.deepEqual(
        readdirSync(py.dir).filter((f) => f.startsWith('x')),
        [],
        'a file the review could not name was applied',
      );
      const branch = forgeBranches(py.dir)[0]!;
      assert.equal(
        git(py.dir, 'ls-tree', '-r', '--name-only', branch)
          .split('\n')
          .filter((l) => l.includes('conftest')).length,
        0,
      );
    } finally {
      py.cleanup();
    }
  });

  it('Apply to a checkout owned by another user gives files back to their owners, never through a link swapped in meanwhile', function () {
    requireFeature(this, ROOT, 'needs a root runner (CI runs as root)');
    const top = mkdtempSync(join(scratch, 'owned-'));
    const victim = mkdtempSync(join(scratch, 'victim-'));
    try {
      writeFileSync(join(top, 'old.txt'), 'x');
      chownSync(top, 1234, 1234);
      chownSync(join(top, 'old.txt'), 1234, 1234);
      writeFileSync(join(victim, 'secret'), 's');
      const restore = rememberCheckoutOwners(top, ['old.txt', 'newdir/secret']);
      // What git apply does as root: replace old.txt, create newdir/secret...
      rmSync(join(top, 'old.txt'));
      writeFileSync(join(top, 'old.txt'), 'y');
      mkdirSync(join(top, 'newdir'));
      writeFileSync(join(top, 'newdir', 'secret'), 'z');
      // ...and a command on the checkout swaps newdir for a link to elsewhere before the chown.
      rmSync(join(top, 'newdir'), { recursive: true });
      symlinkSync(victim, join(top, 'newdir'));
      restore();
      assert.equal(statSync(join(top, 'old.txt')).uid, 1234);
      assert.equal(statSync(join(victim, 'secret')).uid, 0, 'a file outside the checkout was given away through a link');
    } finally {
      rmSync(top, { recursive: true, force: true });
    }
  });

  it('escape sequences from a failing install and an over-long path from the model reach no terminal raw; the attempt goes on', () => {
    const repo = pyRepo();
    try {
      const install = cli([
        'fix',
        '--repo',
        repo.dir,
        '--provider',
        'host',
        '--attempts',
        '1',
        '--issue-text',
        'x',
        '--model',
        replay(scratch, [finish]),
        '--test-cmd',
        'python3 -m pytest -q',
        '--install-cmd',
        "printf '\\033]0;PWN\\007'; exit 1",
      ]);
      assert.equal(install.status, 2, install.stderr);
      // eslint-disable-next-line no-control-regex -- the test looks for control characters
      assert.equal(/[\u0000-\u0008\u000b-\u001f\u007f]/.test(install.stderr), false, 'raw control characters on stderr');
      const longName = '\u001b]0;TITLE\u0007' + 'A'.repeat(300);
      const r = fix(
        repo.dir,
        replay(scratch, [{ tool_calls: [{ name: 'write_file', arguments: { path: longName, content: 'x' } }] }, fixAdd, finish]),
      );
      assert.equal(r.status, 0, r.stderr.slice(-800));
      // eslint-disable-next-line no-control-regex -- the test looks for control characters
      assert.equal(/[\u0000-\u0008\u000b-\u001f\u007f]/.test(r.stderr), false);
    } finally {
      repo.cleanup();
    }
  });

  it('a tree deeper than PATH_MAX: the run ends normally, nothing is left, its hazards are neutralized and the diff says what it cannot see', function () {
    const repo = pyRepo();
    try {
      const deep =
        "python3 -c \"import os, shutil\nos.mkdir('top'); os.chdir('top')\nos.mkdir('\\x1b]0;PWNED\\x07'); os.chdir('\\x1b]0;PWNED\\x07')\nfor i in range(25):\n    os.mkdir('d'*200); os.chdir('d'*200)\nopen('hidden.py','w').write('x'); os.mkfifo('fifo'); shutil.copy('/bin/sh','suidsh'); os.chmod('suidsh', 0o6755)\"";
      const cell = cellJson(repo.dir, deep);
      assert.deepEqual(cell.neutralized.map((n: { found: string }) => n.found).sort(), ['fifo', 'setid']);
      assert.match(cell.diff.incomplete, /longer than 4096 bytes/);
      spawnSync('rm', ['-rf', join(repo.dir, 'top')]);
      const r = fix(repo.dir, replay(scratch, [{ tool_calls: [{ name: 'run_command', arguments: { command: deep } }] }, fixAdd, finish]));
      assert.ok(r.status === 0 || r.status === 1, `exit ${r.status}: ${r.stderr.slice(-800)}`);
      // eslint-disable-next-line no-control-regex -- the test looks for control characters
      assert.equal(/[\u0000-\u0008\u000b-\u001f\u007f]/.test(r.stderr), false, 'raw control characters reached the terminal');
      const report = JSON.parse(r.stdout);
      assert.match(report.attempts[0].error ?? '', /could not be captured completely/);
      const cells = join(repo.dir, '.git', 'forge-cells');
      assert.deepEqual(existsSync(cells) ? readdirSync(cells) : [], []);
      assert.equal(cli(['gc', '--repo', repo.dir]).status, 0);
    } finally {
      spawnSync('rm', ['-rf', repo.dir]);
    }
  });

  it('text hidden as binary is flagged; a large text file is shown as text (patch capped), not as binary', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = cellJson(
        repo.dir,
        'printf "// \\0\\nmodule.exports = () => 1\\n" > index.js; printf "A=1\\0\\n" > .envrc; printf "#!/bin/sh\\n# \\0\\necho hi\\n" > run-me; printf "echo a\\n\\0\\necho b\\n" > tool && chmod +x tool; python3 -c "open(\'big.py\',\'w\').write(\'x = 1\\n\' * 300000)"',
      );
      for (const name of ['index.js', '.envrc', 'run-me', 'tool'])
        assert.ok(
          r.diff.warnings.some((w: string) => w.startsWith(`${name} is shown as binary`)),
          `${name}: ${JSON.stringify(r.diff.warnings)}`,
        );
      assert.equal(r.diff.files.find((f: { path: string }) => f.path === 'big.py').binary, false);
      assert.equal(r.diff.truncated, true);
    } finally {
      repo.cleanup();
    }
  });

  it('a tracked file replaced by a nested repository: patch and commit agree (deleted, no gitlink)', async () => {
    const repo = makeRepo({ 't.txt': 't\n', 'a.txt': 'a\n' });
    const wt = await createAttemptWorktree(repo.dir, 'HEAD', 'sec-gitlink');
    try {
      rmSync(join(wt.path, 't.txt'));
      mkdirSync(join(wt.path, 't.txt'));
      git(join(wt.path, 't.txt'), 'init', '-q');
      writeFileSync(join(wt.path, 't.txt', 'f'), 'f\n');
      git(join(wt.path, 't.txt'), 'add', '-A');
      git(join(wt.path, 't.txt'), '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-qm', 'n');
      const src = { location: wt.location, base: wt.baseCommit };
      const { patch, omitted } = await captureApplicablePatch(src);
      const text = patch.toString('latin1');
      assert.doesNotMatch(text, /160000|Subproject commit/);
      assert.match(text, /deleted file mode 100644/);
      assert.ok(omitted.some((o) => o.path === 't.txt/'));
      const { commit } = await commitWorktreeChanges(src, 'x');
      assert.notEqual(
        spawnSync('git', ['-c', 'safe.directory=*', 'cat-file', '-e', `${commit}:t.txt`], { cwd: repo.dir }).status,
        0,
        'the commit still has t.txt',
      );
    } finally {
      await destroyAttemptWorktree(wt);
      repo.cleanup();
    }
  });

  it('bad --issue-file, --out and --branch are refused before anything runs', () => {
    const repo = pyRepo();
    try {
      const model = replay(scratch, [fixAdd, finish]);
      const dir = cli(['fix', '--repo', repo.dir, '--issue-file', tmpdir(), '--model', model]);
      assert.equal(dir.status, 2, dir.stderr);
      assert.match(dir.stderr, /is not a file/);
      for (const [flags, message] of [
        [['--out', '/etc/passwd/x'], /is not a directory/],
        [['--out', '/proc/x'], /kernel filesystem/],
        [['--branch', 'bad..name'], /not a valid branch name/],
      ] as const) {
        const r = fix(repo.dir, model, [...flags]);
        assert.equal(r.status, 2, r.stderr);
        assert.match(r.stderr, message);
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      }
      const runs = JSON.parse(cli(['runs', 'list', '--json']).stdout) as { repo: string }[];
      assert.ok(!runs.some((x) => x.repo === repo.dir), 'a run was recorded for bad input');
      assert.ok(statSync(repo.dir).isDirectory());
    } finally {
      repo.cleanup();
    }
  });
});
