import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { cellSpecFromFlags } from '../../../runner/src/cli/parseCellRunArgs.js';
import { CellResultSchema } from '../../../runner/src/protocol/cellResult.js';
import { HealthReportSchema } from '../../../runner/src/protocol/health.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { makeRepo, scratchDir } from '../../helpers/gitRepo.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { requireFeature } from '../../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const cli = (args: string[], opts: { cwd?: string; input?: string } = {}) =>
  spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', cwd: opts.cwd, input: opts.input });

describe('forge-runner CLI', function () {
  this.timeout(60_000);
  before(function () {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
  });

  it('cell run --json prints a CellResult and exits 0 whatever the command returned', () => {
    const r = cli(['cell', 'run', '--json', '--', 'echo out; exit 3']);
    assert.equal(r.status, 0, r.stderr);
    const result = CellResultSchema.parse(JSON.parse(r.stdout));
    assert.equal(result.exit_code, 3);
    assert.equal(result.output, 'out\n');
  });

  it('cell run prints a human summary with the diff of a worktree', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = cli(['cell', 'run', '--worktree', '.', '--env', 'GREETING=hi', '--', 'echo $GREETING >> a.txt; cat a.txt'], {
        cwd: repo.dir,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /exit 0/);
      assert.match(r.stdout, /a\nhi\n/);
      assert.match(r.stdout, /modified\s+a\.txt/);
      assert.match(r.stdout, /isolation: /);
    } finally {
      repo.cleanup();
    }
  });

  it('bad input: one line naming the problem, exit 2, nothing run', () => {
    const scratch = scratchDir('forge-cli-');
    const marker = join(scratch.dir, 'ran');
    try {
      const cases: [string[], RegExp][] = [
        [['cell', 'run'], /missing required argument/],
        [['cell', 'run', '--timeout', '-1', '--', `touch ${marker}`], /--timeout/],
        [['cell', 'run', '--timeout', 'soon', '--', `touch ${marker}`], /--timeout/],
        [['cell', 'run', '--provider', 'nope', '--', `touch ${marker}`], /provider/],
        [['cell', 'run', '--worktree', join(scratch.dir, 'missing'), '--', `touch ${marker}`], /does not exist/],
        [['cell', 'run', '--worktree', scratch.dir, '--', `touch ${marker}`], /not a git work tree/],
        [['cell', 'run', '--env', 'NOEQUALS', '--', `touch ${marker}`], /NAME=VALUE/],
        [['cell', 'run', '--memory', '12.5', '--', `touch ${marker}`], /--memory/],
        [['cell', 'run', '--image', 'alpine', '--', `touch ${marker}`], /takes no image/],
        [['cell', 'run', '--bogus', '--', `touch ${marker}`], /unknown option/],
        [['spec-run', join(scratch.dir, 'nope.json')], /cannot read a CellSpec/],
      ];
      for (const [args, re] of cases) {
        const r = cli(args);
        assert.equal(r.status, 2, `${args.join(' ')} -> ${r.status}: ${r.stderr}`);
        assert.match(r.stderr, re, args.join(' '));
        assert.equal(r.stderr.trim().split('\n').length, 1, `more than one line for ${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stdout, '');
      }
      assert.equal(existsSync(marker), false, 'a command ran despite bad input');
    } finally {
      scratch.cleanup();
    }
  });

  it('spec-run takes a CellSpec on stdin and rejects an invalid one with exit 2', () => {
    const ok = cli(['spec-run', '-'], { input: JSON.stringify({ cmd: ['echo', 'from-spec'] }) });
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).output, 'from-spec\n');
    const bad = cli(['spec-run', '-'], { input: JSON.stringify({ cmd: 'x', timeout_s: 'never' }) });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /invalid CellSpec: timeout_s/);
  });

  it('health --json reports every provider and what the host provider enforces', () => {
    const r = cli(['health', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const report = HealthReportSchema.parse(JSON.parse(r.stdout));
    assert.deepEqual(
      report.providers.map((p) => p.provider),
      ['host', 'docker', 'qemu', 'swarm'],
    );
    const qemu = report.providers[2]!;
    if (qemu.available) {
      assert.match(String(qemu.details.accelerator), /^(kvm|tcg)$/, 'health names the accelerator');
      assert.ok(String(qemu.details.accelerator_reason).length > 0, 'and why');
    } else assert.match(qemu.reason, /install|not found|root/);
    const host = report.providers[0]!;
    assert.equal(host.available, true);
    assert.ok(host.isolation);
  });

  it('health says loudly when bubblewrap is missing', () => {
    // A PATH with bash (the launcher) but no bwrap.
    const bin = scratchDir('forge-path-');
    symlinkSync(execFileSync('sh', ['-c', 'command -v bash'], { encoding: 'utf8' }).trim(), join(bin.dir, 'bash'));
    const r = spawnSync(process.execPath, [RUNNER, 'health'], { encoding: 'utf8', env: { ...process.env, PATH: bin.dir } });
    bin.cleanup();
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /host\s+DEGRADED: plain subprocess/);
    assert.match(r.stdout, /NOT SANDBOXED/);
  });

  it('cell run --provider docker runs in a container and reports the engine in health', async function () {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    requireFeature(this, why === null, why ?? '');
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = cli([
        'cell',
        'run',
        '--json',
        '--provider',
        'docker',
        '--image',
        TEST_IMAGES.busybox,
        '--worktree',
        repo.dir,
        '--memory',
        '128',
        '--',
        'echo b >> a.txt; pwd',
      ]);
      assert.equal(r.status, 0, r.stderr);
      const result = CellResultSchema.parse(JSON.parse(r.stdout));
      assert.equal(result.provider, 'docker');
      assert.equal(result.output, '/work\n');
      assert.equal(result.isolation.cgroup.memory_max_bytes, 128 * 1024 * 1024);
      assert.deepEqual(
        result.diff?.files.map((f) => f.path),
        ['a.txt'],
      );
      const missing = cli(['cell', 'run', '--provider', 'docker', '--image', 'forge-test/absent:0', '--', 'true']);
      assert.equal(missing.status, 2);
      assert.match(missing.stderr, /not in the local Docker engine/);
      const noImage = cli(['cell', 'run', '--provider', 'docker', '--', 'true']);
      assert.equal(noImage.status, 2);
      assert.match(noImage.stderr, /needs an image/);
      const health = HealthReportSchema.parse(JSON.parse(cli(['health', '--json']).stdout));
      const docker = health.providers.find((p) => p.provider === 'docker');
      assert.equal(docker?.available, true);
      assert.match(docker?.details.engine ?? '', /\d+\.\d+/);
    } finally {
      repo.cleanup();
    }
  });

  it('--help explains the commands', () => {
    const r = cli(['cell', 'run', '--help']);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /--worktree/);
    assert.match(r.stdout, /Exit status/);
  });
});

describe('cellSpecFromFlags', () => {
  const flags = { provider: 'host', env: [] as string[], diff: true };
  it('treats one word as a shell line and several as argv', () => {
    assert.equal(cellSpecFromFlags(flags, ['make && make test'], '/').cmd, 'make && make test');
    assert.deepEqual(cellSpecFromFlags(flags, ['npm', 'test'], '/').cmd, ['npm', 'test']);
  });
  it('resolves a relative worktree against the working directory', () => {
    assert.equal(cellSpecFromFlags({ ...flags, worktree: 'repo' }, ['x'], '/home/u').worktree, '/home/u/repo');
  });
  it('splits --allow-net and rejects empty lists', () => {
    assert.deepEqual(cellSpecFromFlags({ ...flags, allowNet: 'a.example.org, b.example.org' }, ['x'], '/').allow_net, [
      'a.example.org',
      'b.example.org',
    ]);
    assert.throws(() => cellSpecFromFlags({ ...flags, allowNet: ',' }, ['x'], '/'), InputError);
  });
});
