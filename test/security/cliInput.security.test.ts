// Untrusted input at the CLI: a CellSpec on a slow pipe, NUL bytes, escape sequences in a
// command's output, a model that cannot work. Each gets a clear answer and no side effects.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

describe('CLI input (each test feeds something hostile or broken)', function () {
  this.timeout(120_000);

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
  });

  it('F6: spec-run - reads a 100 KiB CellSpec arriving slowly on a pipe to its end', async () => {
    const spec = JSON.stringify({ cmd: ['sh', '-c', 'printf %s "$BIG" | wc -c'], env: { BIG: 'x'.repeat(100 * 1024) } });
    const child = spawn(process.execPath, [RUNNER, 'spec-run', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const third = Math.ceil(spec.length / 3);
    for (let i = 0; i < 3; i++) {
      child.stdin.write(spec.slice(i * third, (i + 1) * third));
      await new Promise((r) => setTimeout(r, 300));
    }
    child.stdin.end();
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    assert.equal(code, 0, err);
    assert.equal(JSON.parse(out).output.trim(), String(100 * 1024));
  });

  it('an argument or environment entry larger than Linux can exec is bad input, not a failure in the cell', () => {
    for (const spec of [
      { cmd: ['echo', 'x'.repeat(200 * 1024)] },
      { cmd: 'true', env: { BIG: 'x'.repeat(200 * 1024) } },
      { cmd: 'x'.repeat(200 * 1024) },
    ]) {
      const r = spawnSync(process.execPath, [RUNNER, 'spec-run', '-'], { input: JSON.stringify(spec), encoding: 'utf8' });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /MAX_ARG_STRLEN/);
    }
  });

  it('F6: a NUL byte in a command is named as such (not "empty"), exit 2', () => {
    const r = spawnSync(process.execPath, [RUNNER, 'spec-run', '-'], { input: JSON.stringify({ cmd: 'echo a\u0000b' }), encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /NUL/);
    assert.doesNotMatch(r.stderr, /empty/);
  });

  it('F6: escape sequences a command prints (or puts in file names) reach the terminal only as visible text', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = spawnSync(
        process.execPath,
        [
          RUNNER,
          'cell',
          'run',
          '--worktree',
          repo.dir,
          '--',
          "printf '\\033]0;pwned\\007\\033[31mred\\n'; touch \"$(printf 'x\\033[2Jy')\"",
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      // eslint-disable-next-line no-control-regex -- the test looks for control characters
      assert.equal(/[\u0000-\u0008\u000b-\u001f\u007f]/.test(r.stdout), false, 'a raw control character reached the terminal');
      assert.match(r.stdout, /\\x1b\]0;pwned\\x07\\x1b\[31mred/);
      assert.match(r.stdout, /x\\x1b\[2Jy/);
      // JSON output is unchanged: the exact bytes, escaped by JSON itself.
      const j = spawnSync(process.execPath, [RUNNER, 'cell', 'run', '--json', '--', "printf '\\033[31mred'"], { encoding: 'utf8' });
      assert.equal(JSON.parse(j.stdout).output, '\u001b[31mred');
    } finally {
      repo.cleanup();
    }
  });

  it('F6: --model openai against api.openai.com without a key is refused before anything starts', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const state = mkdtempSync(join(tmpdir(), 'forge-nokey-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, FORGE_STATE_DIR: state };
      for (const k of ['OPENAI_API_KEY', 'FORGE_API_KEY', 'FORGE_BASE_URL', 'OPENAI_BASE_URL', 'FORGE_MODEL']) delete env[k];
      const r = spawnSync(
        process.execPath,
        [RUNNER, 'fix', '--repo', repo.dir, '--issue-text', 'x', '--model', 'openai:gpt-4o', '--test-cmd', 'false'],
        { encoding: 'utf8', env },
      );
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /needs a key: set FORGE_API_KEY or OPENAI_API_KEY/);
      const runs = spawnSync(process.execPath, [RUNNER, 'runs', 'list', '--json'], { encoding: 'utf8', env });
      assert.deepEqual(JSON.parse(runs.stdout), []);
    } finally {
      rmSync(state, { recursive: true, force: true });
      repo.cleanup();
    }
  });
});
