// Each test tries to make host-side git (diff capture, commit, apply) run a program, hide a
// change or fail, using only what an attacker controls: the agent's tools, a cell's command,
// and files in the tree. Every marker a test checks can only be created by the host.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../runner/src/workspace/attemptWorktree.js';
import { applyPatch } from '../../runner/src/workspace/applyPatch.js';
import { captureApplicablePatch, captureWorktreeDiff, commitWorktreeChanges } from '../../runner/src/workspace/captureWorktreeDiff.js';
import { git, makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

function cli(args: string[], opts: { cwd?: string; input?: string } = {}) {
  const r = spawnSync(process.execPath, [RUNNER, ...args], {
    encoding: 'utf8',
    cwd: opts.cwd,
    input: opts.input,
    timeout: 280_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function cellJson(worktree: string, cmd: string, extra: string[] = []) {
  const r = cli(['cell', 'run', '--json', '--worktree', worktree, ...extra, '--', cmd]);
  assert.equal(r.status, 0, `cell run failed (${r.status}): ${r.stderr.slice(-800)}`);
  return JSON.parse(r.stdout) as {
    exit_code: number;
    output: string;
    neutralized?: { path: string; found: string; action: string }[];
    diff: {
      patch: string;
      files: { path: string; status: string; binary: boolean }[];
      files_total?: number;
      omitted: { path: string; reason: string }[];
      incomplete?: string | null;
    } | null;
  };
}

const markerPath = (what: string) => join(tmpdir(), `forge-pwned-${what}-${process.pid}-${Date.now()}`);

describe('host git never trusts the worktree (each test tries to make the host run or hide something)', function () {
  this.timeout(300_000);

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  it("F1: the agent redirects the attempt's .git through a symlink to a git dir with a filter; the host never runs it", function () {
    const repo = makeRepo({
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n',
    });
    const marker = markerPath('f1');
    // A complete git directory of the agent's own (a commit of the tree, so host git gets as
    // far as hashing changed files) that defines a filter for every path.
    const plant = [
      'ln -s .git gitlink',
      'git init -q --bare evilgit',
      "git --git-dir=evilgit --work-tree=. add -A -- . ':!evilgit' ':!gitlink'",
      'git --git-dir=evilgit --work-tree=. -c user.name=x -c user.email=x@x commit -qm x',
      'git --git-dir=evilgit config core.bare false',
      `git --git-dir=evilgit config filter.x.clean 'sh -c "touch ${marker}; cat"'`,
      'git --git-dir=evilgit config filter.x.required true',
      'printf "* filter=x\\n" > .gitattributes',
    ].join(' && ');
    const script = {
      version: 1,
      attempts: [
        [
          { tool_calls: [{ name: 'run_command', arguments: { command: plant } }] },
          { tool_calls: [{ name: 'write_file', arguments: { path: 'gitlink', content: 'gitdir: evilgit\n' } }] },
          { tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' } }] },
          { tool_calls: [{ name: 'run_tests', arguments: {} }] },
          { tool_calls: [{ name: 'finish', arguments: { summary: 'fixed (and planted a filter)' } }] },
        ],
      ],
    };
    const scratch = mkdtempSync(join(tmpdir(), 'forge-f1-'));
    try {
      writeFileSync(join(scratch, 'replay.json'), JSON.stringify(script));
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
        `replay:${join(scratch, 'replay.json')}`,
        '--test-cmd',
        'python3 -m pytest -q',
        '--json',
      ]);
      assert.equal(existsSync(marker), false, 'host git ran the planted filter');
      assert.ok(r.status === 0 || r.status === 1, `the run must end normally, not crash: exit ${r.status}: ${r.stderr.slice(-600)}`);
      const cells = join(repo.dir, '.git', 'forge-cells');
      assert.deepEqual(existsSync(cells) ? readdirSync(cells) : [], [], 'worktrees left behind');
    } finally {
      try {
        git(repo.dir, 'worktree', 'prune');
        for (const b of git(repo.dir, 'branch', '--list', 'forge/*')
          .split('\n')
          .map((l) => l.replace(/^[*+]?\s*/, ''))
          .filter(Boolean))
          git(repo.dir, 'branch', '-D', b);
      } catch {
        /* the repository goes with cleanup() */
      }
      rmSync(marker, { force: true });
      rmSync(scratch, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it('F2: a worktree whose git directory lies inside the tree is refused before anything runs', () => {
    const wt = mkdtempSync(join(tmpdir(), 'forge-f2-'));
    const marker = markerPath('f2');
    try {
      git(wt, 'init', '-q', `--separate-git-dir=${join(wt, '.realgit')}`);
      writeFileSync(join(wt, 'a.txt'), 'a\n');
      git(wt, 'add', '-A');
      git(wt, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base');
      const attack = `printf '[filter "x"]\\n\\tclean = sh -c "touch ${marker}; cat"\\n' >> .realgit/config; echo "* filter=x" > .gitattributes; echo ran > cell-ran; echo b >> a.txt`;
      for (const extra of [[], ['--no-diff']]) {
        const r = cli(['cell', 'run', '--worktree', wt, ...extra, '--', attack]);
        assert.equal(r.status, 2, `expected bad input, got ${r.status}: ${r.stderr}`);
        assert.match(r.stderr, /inside the tree a cell writes/);
        assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
        assert.equal(existsSync(join(wt, 'cell-ran')), false, 'the cell ran');
      }
      assert.equal(existsSync(marker), false);
    } finally {
      rmSync(marker, { force: true });
      rmSync(wt, { recursive: true, force: true });
    }
  });

  it('Q4: file names are literal pathspecs, in-tree .gitignore and .gitattributes change nothing the diff lists or shows', () => {
    const repo = makeRepo({ 'a.txt': 'one\ntwo\n', 'keep.txt': 'k\n' });
    try {
      const r = cellJson(
        repo.dir,
        [
          'echo x > ":(exclude)*"',
          'echo y > ":(bad)x"',
          'echo z > ":(glob)**"',
          'echo new > new.txt',
          'printf "*\\n" > .gitignore',
          'printf "* -diff\\n" > .gitattributes',
          'printf "one\\ninjected\\n" > a.txt',
        ].join('; '),
      );
      const diff = r.diff!;
      const paths = diff.files.map((f) => f.path).sort();
      assert.deepEqual(paths, [':(bad)x', ':(exclude)*', ':(glob)**', '.gitattributes', '.gitignore', 'a.txt', 'new.txt'].sort());
      const a = diff.files.find((f) => f.path === 'a.txt')!;
      assert.equal(a.binary, false, 'an in-tree -diff attribute made a text change look binary');
      assert.match(diff.patch, /^\+injected$/m);
      assert.doesNotMatch(diff.patch, /Binary files/);
    } finally {
      repo.cleanup();
    }
  });

  it("drivers from the repository's own config are never run for attributes a cell wrote (filter, textconv, diff command)", () => {
    const repo = makeRepo({ 'a.txt': 'one\n' });
    const markers = {
      clean: markerPath('clean'),
      textconv: markerPath('textconv'),
      command: markerPath('command'),
      process: markerPath('process'),
    };
    try {
      git(repo.dir, 'config', 'filter.lfsish.clean', `sh -c "touch ${markers.clean}; cat"`);
      git(repo.dir, 'config', 'filter.lfsish.process', `sh -c "touch ${markers.process}; exit 1"`);
      git(repo.dir, 'config', 'diff.tc.textconv', `sh -c "touch ${markers.textconv}; cat $1" --`);
      git(repo.dir, 'config', 'diff.tc.command', `sh -c "touch ${markers.command}"`);
      const r = cellJson(repo.dir, 'printf "* filter=lfsish diff=tc\\n" > .gitattributes; echo two >> a.txt');
      assert.ok(r.diff!.files.some((f) => f.path === 'a.txt'));
      for (const [what, m] of Object.entries(markers)) assert.equal(existsSync(m), false, `the ${what} driver ran on the host`);
    } finally {
      for (const m of Object.values(markers)) rmSync(m, { force: true });
      repo.cleanup();
    }
  });

  it('program-running config keys of the repository (fsmonitor, hooks, pager, external diff, includes) never run during capture', () => {
    const repo = makeRepo({ 'a.txt': 'one\n' });
    const marker = markerPath('keys');
    const included = join(tmpdir(), `forge-included-${process.pid}.cfg`);
    try {
      writeFileSync(included, `[core]\n\tfsmonitor = "touch ${marker}-inc"\n`);
      git(repo.dir, 'config', 'core.fsmonitor', `touch ${marker}-fsmonitor`);
      git(repo.dir, 'config', 'core.pager', `touch ${marker}-pager`);
      git(repo.dir, 'config', 'diff.external', `touch ${marker}-external`);
      git(repo.dir, 'config', 'core.hooksPath', join(repo.dir, '.git', 'myhooks'));
      git(repo.dir, 'config', 'include.path', included);
      mkdirSync(join(repo.dir, '.git', 'myhooks'));
      for (const hook of ['post-index-change', 'reference-transaction', 'post-commit', 'pre-commit', 'post-checkout']) {
        writeFileSync(join(repo.dir, '.git', 'myhooks', hook), `#!/bin/sh\ntouch ${marker}-${hook}\n`, { mode: 0o755 });
      }
      const r = cellJson(repo.dir, 'echo two >> a.txt; echo n > n.txt');
      assert.deepEqual(r.diff!.files.map((f) => f.path).sort(), ['a.txt', 'n.txt']);
      const ran = readdirSync(tmpdir()).filter((f) => f.startsWith(marker.split('/').pop()!));
      assert.deepEqual(ran, [], 'host git ran a program from the repository config');
    } finally {
      for (const f of readdirSync(tmpdir()).filter((f) => f.startsWith(marker.split('/').pop()!)))
        rmSync(join(tmpdir(), f), { force: true });
      rmSync(included, { force: true });
      repo.cleanup();
    }
  });

  it('a .git directory planted deeper in the tree (a nested repository with fsmonitor) is named, never run', () => {
    const repo = makeRepo({ 'a.txt': 'one\n' });
    const marker = markerPath('nested');
    try {
      const r = cellJson(
        repo.dir,
        `mkdir -p sub && cd sub && git init -q . && git config core.fsmonitor "touch ${marker}" && echo f > f.txt`,
      );
      assert.equal(existsSync(marker), false);
      assert.ok(r.diff!.omitted.some((o) => o.path === 'sub/' && /nested git repository/.test(o.reason)));
    } finally {
      rmSync(marker, { force: true });
      repo.cleanup();
    }
  });

  it("commit and 3-way apply (the runner's own writes) run no merge driver or filter that a tree selects", async () => {
    const repo = makeRepo({ 'a.txt': 'one\ntwo\nthree\n' });
    const markers = { merge: markerPath('merge'), clean: markerPath('commit-clean'), smudge: markerPath('smudge') };
    try {
      git(repo.dir, 'config', 'merge.evil.driver', `sh -c "touch ${markers.merge}; exit 1"`);
      git(repo.dir, 'config', 'filter.evil.clean', `sh -c "touch ${markers.clean}; cat"`);
      git(repo.dir, 'config', 'filter.evil.smudge', `sh -c "touch ${markers.smudge}; cat"`);
      const attempt = await createAttemptWorktree(repo.dir, 'HEAD', 'sec-merge');
      const target = await createAttemptWorktree(repo.dir, 'HEAD', 'sec-target');
      try {
        // The attempt selects the drivers for everything and changes a line.
        writeFileSync(join(attempt.path, '.gitattributes'), '* merge=evil filter=evil\n');
        writeFileSync(join(attempt.path, 'a.txt'), 'one\ntwo\nthree\nfour\n');
        const { patch } = await captureApplicablePatch({ location: attempt.location, base: attempt.baseCommit });
        await commitWorktreeChanges({ location: attempt.location, base: attempt.baseCommit }, 'attempt');
        // The target moved on elsewhere in the file: the patch needs a 3-way merge.
        writeFileSync(join(target.path, '.gitattributes'), '* merge=evil filter=evil\n');
        writeFileSync(join(target.path, 'a.txt'), 'ONE\ntwo\nthree\n');
        git(target.path, 'add', '-A');
        git(
          target.path,
          '-c',
          'user.name=t',
          '-c',
          'user.email=t@t',
          '-c',
          'filter.evil.clean=cat',
          '-c',
          'core.hooksPath=/dev/null',
          'commit',
          '-qm',
          'moved',
        );
        rmSync(markers.clean, { force: true });
        const outcome = await applyPatch({ location: target.location, baseCommit: git(target.path, 'rev-parse', 'HEAD').trim() }, patch);
        assert.ok(outcome.applied || outcome.conflicts.length > 0);
        for (const [what, m] of Object.entries(markers)) assert.equal(existsSync(m), false, `the ${what} driver ran on the host`);
      } finally {
        await destroyAttemptWorktree(attempt);
        await destroyAttemptWorktree(target);
      }
    } finally {
      for (const m of Object.values(markers)) rmSync(m, { force: true });
      repo.cleanup();
    }
  });

  it("a rewritten .git file in a worktree does not redirect the runner's git", async () => {
    const repo = makeRepo({ 'a.txt': 'one\n' });
    const marker = markerPath('gitfile');
    const evil = mkdtempSync(join(tmpdir(), 'forge-evilgit-'));
    try {
      git(evil, 'init', '-q', '--bare', '.');
      git(evil, 'config', 'core.fsmonitor', `touch ${marker}`);
      git(evil, 'config', 'filter.x.clean', `sh -c "touch ${marker}; cat"`);
      const wt = await createAttemptWorktree(repo.dir, 'HEAD', 'sec-gitfile');
      try {
        // As if a cell or a tool had replaced the .git file after the runner made the worktree.
        writeFileSync(join(wt.path, '.git'), `gitdir: ${evil}\n`);
        writeFileSync(join(wt.path, '.gitattributes'), '* filter=x\n');
        writeFileSync(join(wt.path, 'a.txt'), 'two\n');
        const diff = await captureWorktreeDiff({ location: wt.location, base: wt.baseCommit });
        assert.deepEqual(diff.files.map((f) => f.path).sort(), ['.gitattributes', 'a.txt']);
        assert.equal(existsSync(marker), false);
      } finally {
        await destroyAttemptWorktree(wt);
      }
    } finally {
      rmSync(marker, { force: true });
      rmSync(evil, { recursive: true, force: true });
      repo.cleanup();
    }
  });
});
