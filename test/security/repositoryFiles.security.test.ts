import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { handOverToCellUser } from '../../runner/src/hostguard/cellUser.js';
import { git } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';
import { dockerUnavailable, TEST_IMAGES } from '../helpers/docker.js';
import { requireQemu } from '../helpers/qemu.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../helpers/swarm.js';

/**
 * Issue 25, breaks 2, 3, 6 and 8: what a hostile repository's own files (.forgeinclude,
 * .forge/config.json, links in its tree, its install step) can make the runner do. Each test
 * is the attack as a repository can mount it, run through the real CLI on host cells.
 */
const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const SECRET = 'sk-live-0123456789-forge-secret';
const LOCAL = 'local-config-for-tests-7731';

function hostileRepo(files: Record<string, string>): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'forge-hostile-'));
  git(dir, 'init', '-q', '-b', 'main');
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  handOverToCellUser(dir);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A model that does nothing: the cells that matter are the run's own (install, baseline). */
function idleReplay(): { spec: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
  writeFileSync(join(dir, 'replay.json'), JSON.stringify({ version: 1, attempts: [[{ content: 'nothing to do' }]] }));
  return { spec: `replay:${join(dir, 'replay.json')}`, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function runner(args: string[], opts: { input?: string } = {}) {
  const r = spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', timeout: 240_000, input: opts.input ?? '' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The cell logs the store kept after row `since`: what the commands of later runs printed. */
function cellLogs(since = 0): string {
  const path = join(process.env.FORGE_STATE_DIR!, 'forge.db');
  if (!existsSync(path)) return '';
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT log FROM cell_executions WHERE rowid > ? ORDER BY rowid').all(since) as { log: string | null }[])
      .map((r) => r.log ?? '')
      .join('\n');
  } finally {
    db.close();
  }
}

/** The newest cell row now: cellLogs(logMark()) later shows only what came after. */
function logMark(): number {
  const path = join(process.env.FORGE_STATE_DIR!, 'forge.db');
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT COALESCE(MAX(rowid), 0) AS m FROM cell_executions').get() as { m: number }).m;
  } finally {
    db.close();
  }
}

/** The runner with a stdin pipe held open and never written: a read of /proc/self/fd/0 would block until the deadline. */
function runnerHeld(
  args: string[],
  deadlineMs: number,
): Promise<{ status: number | null; killed: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUNNER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, deadlineMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, killed, stdout, stderr });
    });
  });
}

function fix(repo: string, model: string, extra: string[], provider: string[] = ['--provider', 'host']) {
  return runner(['fix', '--repo', repo, '--issue-text', 'make the test pass', '--model', model, '--attempts', '1', ...provider, ...extra]);
}

/** Break 3 as a test on one provider: the install cell (docker, qemu, swarm: its own) plants the links. */
function installLinksAttack(model: string, provider: string[]): void {
  const host = mkdtempSync(join(tmpdir(), 'forge-hostdir-'));
  mkdirSync(join(host, 'x'));
  writeFileSync(join(host, 'x', 'secret.txt'), `${SECRET}\n`);
  chmodSync(host, 0o755);
  const repo = hostileRepo({
    'gitdata/forge-cells/keep': '',
    'hostdir/x/keep': '',
    '.forge/config.json': JSON.stringify({ dependencies: { share: ['gitdata/forge-cells', 'hostdir/x'] } }),
    'probe.sh': 'ls -a gitdata/forge-cells hostdir/x 2>&1; cat hostdir/x/secret.txt 2>&1; exit 1\n',
  });
  try {
    const install = `rm -rf gitdata hostdir && ln -s ${repo.dir}/.git gitdata && ln -s ${host} hostdir`;
    const args = ['--test-cmd', 'sh probe.sh', '--install-cmd', install];
    // Unconfirmed: the shares are not used at all.
    const mark1 = logMark();
    const r1 = fix(repo.dir, model, args, provider);
    if (process.env.FORGE_TEST_VERBOSE) console.log(r1.stderr);
    assert.match(r1.stderr, /config\.json shares "gitdata\/forge-cells", "hostdir\/x" with every cell: not used/);
    assert.match(r1.stderr, /baseline: exit 1/, 'the run went on to its baseline without the shares');
    const seen1 = cellLogs(mark1);
    assert.ok(!seen1.includes(SECRET), 'no host file in a cell');
    assert.ok(!seen1.includes('-baseline'), 'no attempt worktree listed in a cell');
    // Confirmed (the content looked harmless): the links the install made are refused where they stand.
    assert.equal(runner(['trust', '--repo', repo.dir]).status, 0);
    const mark2 = logMark();
    const r2 = fix(repo.dir, model, args, provider);
    if (process.env.FORGE_TEST_VERBOSE) console.log(r2.stderr);
    assert.equal(r2.status, 2, r2.stderr);
    assert.match(r2.stderr, /dependencies\.share "gitdata\/forge-cells": gitdata is a symbolic link; share only real directories/);
    const seen2 = cellLogs(mark2);
    assert.ok(!seen2.includes(SECRET), 'no host file in a cell');
    assert.ok(!seen2.includes('-baseline'), 'no attempt worktree listed in a cell');
  } finally {
    repo.cleanup();
    rmSync(host, { recursive: true, force: true });
  }
}

describe('a repository’s own files are not the user’s word (issue 25: .forgeinclude, .forge/config.json, links, install step)', function () {
  this.timeout(600_000);
  let model: { spec: string; cleanup: () => void };

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    model = idleReplay();
  });
  after(() => model?.cleanup());

  it('break 2: a committed .forgeinclude brings nothing in until confirmed, and never the .env with credentials; --include does, and says so', () => {
    const repo = hostileRepo({
      '.gitignore': '.env\nconfig/local.json\n',
      '.forgeinclude': '.env\nconfig/local.json\n',
      'probe.sh': 'cat .env config/local.json 2>&1; exit 1\n',
    });
    try {
      mkdirSync(join(repo.dir, 'config'));
      writeFileSync(join(repo.dir, '.env'), `TOKEN=${SECRET}\n`);
      writeFileSync(join(repo.dir, 'config', 'local.json'), `{"k":"${LOCAL}"}\n`);
      const probe = ['--test-cmd', 'sh probe.sh'];
      const before = logMark();
      const r1 = fix(repo.dir, model.spec, probe);
      const seen1 = cellLogs(before);
      assert.match(
        r1.stderr,
        /\.forgeinclude copies ".env", "config\/local.json" into every attempt: not used, since it comes with the repository/,
      );
      assert.ok(seen1.includes('No such file'), `the probe ran in a cell: ${seen1.slice(0, 400)}`);
      assert.ok(!seen1.includes(SECRET) && !seen1.includes(LOCAL), 'nothing was copied before the user confirmed');

      const t = runner(['trust', '--repo', repo.dir]);
      assert.equal(t.status, 0, t.stderr);
      assert.match(t.stdout, /\.forgeinclude: confirmed/);
      const mark2 = logMark();
      const r2 = fix(repo.dir, model.spec, probe);
      const seen2 = cellLogs(mark2);
      assert.match(r2.stderr, /names \.env, which look like credentials: not copied/);
      assert.ok(seen2.includes(LOCAL), `the confirmed, harmless file was copied: ${seen2.slice(0, 400)}`);
      assert.ok(!seen2.includes(SECRET), 'the .env never enters a cell from the repository’s list');

      // A changed .forgeinclude is not confirmed any more.
      writeFileSync(join(repo.dir, '.forgeinclude'), '.env\nconfig/local.json\n# changed\n');
      git(repo.dir, 'commit', '-qam', 'the repository changes its list');
      const mark3 = logMark();
      const r3 = fix(repo.dir, model.spec, probe);
      assert.match(r3.stderr, /\.forgeinclude .*: not used/);
      assert.ok(!cellLogs(mark3).includes(LOCAL));

      // The user's own flag is the user's word: it may name the .env, with a warning.
      const mark4 = logMark();
      const r4 = fix(repo.dir, model.spec, [...probe, '--include', '.env']);
      assert.match(r4.stderr, /warning: --include copies \.env into every attempt/);
      assert.ok(cellLogs(mark4).includes(SECRET), 'the observation channel works: the flag brought it');
    } finally {
      repo.cleanup();
    }
  });

  it('break 3: an install step that turns committed directories into links to .git and to a host directory gets neither mounted, confirmed config or not (host)', () => {
    installLinksAttack(model.spec, ['--provider', 'host']);
  });

  it('red team: a confirmed share of a directory holding the user’s ignored .env or a nested repository is refused; an included file never enters the stored patch', () => {
    const repo = hostileRepo({
      '.gitignore': 'config/.env\nvendor/\n',
      'config/app.json': '{}\n',
      '.forge/config.json': JSON.stringify({ dependencies: { share: ['config'] } }),
      'probe.sh': 'cat config/.env 2>&1; exit 1\n',
    });
    try {
      writeFileSync(join(repo.dir, 'config', '.env'), `TOKEN=${SECRET}\n`);
      assert.equal(runner(['trust', '--repo', repo.dir]).status, 0);
      const mark = logMark();
      const r = fix(repo.dir, model.spec, ['--test-cmd', 'sh probe.sh']);
      assert.equal(r.status, 2, r.stderr);
      assert.match(
        r.stderr,
        /dependencies\.share "config": it holds \.env, which looks like it holds credentials; a repository's config never shares that/,
      );
      assert.ok(!cellLogs(mark).includes(SECRET));
      // A nested repository (its config may hold a token in a remote URL) is not shared on the repository's word either.
      rmSync(join(repo.dir, 'config', '.env'));
      mkdirSync(join(repo.dir, 'config', 'lib', '.git'), { recursive: true });
      const r2 = fix(repo.dir, model.spec, ['--test-cmd', 'sh probe.sh']);
      assert.equal(r2.status, 2, r2.stderr);
      assert.match(r2.stderr, /it holds git data \(lib\/\.git\)/);
    } finally {
      repo.cleanup();
    }
  });

  it('red team: an included file that no ignore rule of the base covers stays out of every attempt’s patch', () => {
    const repo = hostileRepo({ 'probe.sh': 'exit 1\n' });
    try {
      writeFileSync(join(repo.dir, 'local.json'), `{"k":"${LOCAL}"}\n`);
      const dir = mkdtempSync(join(tmpdir(), 'forge-replay-'));
      writeFileSync(
        join(dir, 'replay.json'),
        JSON.stringify({
          version: 1,
          attempts: [[{ tool_calls: [{ name: 'write_file', arguments: { path: 'fix.txt', content: 'changed\n' } }] }, { content: 'done' }]],
        }),
      );
      const r = fix(repo.dir, `replay:${join(dir, 'replay.json')}`, ['--test-cmd', 'sh probe.sh', '--include', 'local.json', '--json']);
      rmSync(dir, { recursive: true, force: true });
      assert.match(r.stderr, /include: 1 untracked file\(s\) copied into every attempt: local\.json/);
      const db = new Database(join(process.env.FORGE_STATE_DIR!, 'forge.db'), { readonly: true });
      try {
        const patches = (db.prepare('SELECT patch FROM attempts').all() as { patch: Buffer | string | null }[]).map((p) =>
          String(p.patch ?? ''),
        );
        assert.ok(
          patches.some((p) => p.includes('fix.txt')),
          'the attempt’s own change is in its patch',
        );
        assert.ok(!patches.some((p) => p.includes(LOCAL) || p.includes('local.json')), 'the included file is not');
      } finally {
        db.close();
      }
    } finally {
      repo.cleanup();
    }
  });

  it("a committed .forge/bake.json does not choose the image the cells run in (it is the repository's, not a bake of yours)", () => {
    const repo = hostileRepo({ '.forge/bake.json': JSON.stringify({ image: 'forge-test/busybox:1' }), 'probe.sh': 'exit 1\n' });
    try {
      const r = runner([
        'fix',
        '--repo',
        repo.dir,
        '--issue-text',
        'x',
        '--model',
        model.spec,
        '--attempts',
        '1',
        '--test-cmd',
        'sh probe.sh',
      ]);
      assert.match(r.stderr, /\.forge\/bake\.json is committed in the repository, so it is not your bake record: ignored/);
      assert.match(r.stderr, /1 attempt\(s\) on host/);
    } finally {
      repo.cleanup();
    }
  });

  it('breaks 6 and 8, the class: .forgeinclude, .forge/config.json and .forge as links to a host file, to .git, to /proc/self/fd/0 and to /dev/zero are refused, promptly, without reading through them', async () => {
    const secretDir = mkdtempSync(join(tmpdir(), 'forge-secretdir-'));
    writeFileSync(join(secretDir, 'config.json'), `{"dependencies":{"share":["/etc"]},"x":"${SECRET}"}`);
    writeFileSync(join(secretDir, 'list'), `${SECRET}\n`);
    const targets: Record<string, (repo: string) => string> = {
      'a host file': () => join(secretDir, 'list'),
      '.git': (repo) => join(repo, '.git', 'config'),
      '/proc/self/fd/0': () => '/proc/self/fd/0',
      '/dev/zero': () => '/dev/zero',
    };
    const places: { plant: (repo: string, target: string) => void; name: string }[] = [
      { name: '.forgeinclude', plant: (repo, t) => symlinkSync(t, join(repo, '.forgeinclude')) },
      {
        name: '.forge/config.json',
        plant: (repo, t) => {
          mkdirSync(join(repo, '.forge'), { recursive: true });
          symlinkSync(t, join(repo, '.forge', 'config.json'));
        },
      },
      // The directory itself a link: whatever it points to (a directory holding a config.json) is never read.
      { name: '.forge', plant: (repo) => symlinkSync(secretDir, join(repo, '.forge')) },
    ];
    try {
      for (const place of places) {
        for (const [what, target] of Object.entries(targets)) {
          if (place.name === '.forge' && what !== 'a host file') continue;
          const repo = hostileRepo({ 'a.txt': 'a\n' });
          try {
            place.plant(repo.dir, target(repo.dir));
            const shown = await runnerHeld(['trust', '--repo', repo.dir, '--show', '--json'], 20_000);
            assert.equal(shown.killed, false, `${place.name} -> ${what}: the runner blocked`);
            assert.equal(shown.status, 0, `${place.name} -> ${what}: ${shown.stderr}`);
            assert.ok(!shown.stdout.includes(SECRET), `${place.name} -> ${what}: nothing read through the link`);
            const files = (JSON.parse(shown.stdout) as { files: { file: string; state: string; summary: string }[] }).files;
            const file = place.name === '.forge' ? '.forge/config.json' : place.name;
            const view = files.find((f) => f.file === file)!;
            assert.equal(view.state, 'refused', `${place.name} -> ${what}: ${JSON.stringify(view)}`);
            assert.match(view.summary, /symbolic link|not a regular file|not a directory/);
            // And a run says so and goes on without it (or stops with one line), never blocking or reading it.
            const r = await runnerHeld(
              [
                'fix',
                '--repo',
                repo.dir,
                '--issue-text',
                'x',
                '--model',
                model.spec,
                '--attempts',
                '1',
                '--provider',
                'host',
                '--test-cmd',
                'exit 1',
              ],
              120_000,
            );
            assert.equal(r.killed, false, `${place.name} -> ${what}: the run blocked`);
            assert.match(r.stderr, /is a symbolic link|not a regular file|not a directory/, `${place.name} -> ${what}`);
            assert.ok(!r.stderr.includes(SECRET) && !r.stdout.includes(SECRET));
          } finally {
            repo.cleanup();
          }
        }
      }
    } finally {
      rmSync(secretDir, { recursive: true, force: true });
    }
  });
});

describe('break 3 on every provider: links an install cell planted are never shared', function () {
  this.timeout(900_000);
  let model: { spec: string; cleanup: () => void };
  before(() => (model = idleReplay()));
  after(() => model?.cleanup());

  it('docker', async function () {
    const why = await dockerUnavailable(TEST_IMAGES.bookworm);
    requireFeature(this, why === null, why ?? '');
    installLinksAttack(model.spec, ['--provider', 'docker', '--image', TEST_IMAGES.bookworm]);
  });

  it('qemu', function () {
    requireQemu(this);
    installLinksAttack(model.spec, ['--provider', 'qemu']);
  });

  it('swarm', async function () {
    const why = await swarmUnavailable(1);
    requireFeature(this, why === null, why ?? '');
    installLinksAttack(model.spec, ['--provider', 'swarm', '--registry', TEST_SWARM_REGISTRY, '--image', TEST_IMAGES.bookworm]);
  });
});
