import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { handOverToCellUser } from '../../runner/src/hostguard/cellUser.js';
import { requireFeature } from '../helpers/requirement.js';
import { requireQemu } from '../helpers/qemu.js';

/**
 * Red team round 2, issue 25: a state directory outside the always-hidden trees
 * (FORGE_STATE_DIR=/srv/...) was readable in every host and qemu cell, store included: every
 * run's cell logs (another project's secrets), model turns and consents. It is hidden now, and
 * the store is the runner's alone (0600).
 */
const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const SECRET = 'VICTIM-SECRET-31337';

function cellRun(stateDir: string, provider: string, worktree: string, cmd: string) {
  return spawnSync(process.execPath, [RUNNER, 'cell', 'run', '--provider', provider, '--no-diff', '--worktree', worktree, '--', cmd], {
    encoding: 'utf8',
    env: { ...process.env, FORGE_STATE_DIR: stateDir },
    timeout: 240_000,
  });
}

describe('the runner’s state directory is out of every cell’s reach, wherever it is (issue 25, red team round 2)', function () {
  this.timeout(600_000);
  let stateDir: string;
  let work: string;

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    mkdirSync('/srv', { recursive: true });
    // As `mkdir -p /srv/forge` leaves it (mode 0755): the cell user could enter it.
    stateDir = mkdtempSync('/srv/forge-state-test-');
    chmodSync(stateDir, 0o755);
    work = mkdtempSync(join(tmpdir(), 'forge-attacker-'));
    handOverToCellUser(work);
    // A victim's earlier cell: its log (with a secret) lands in the store and the cells directory.
    const victim = cellRun(stateDir, 'host', work, `echo "victim config API_TOKEN=${SECRET}"`);
    assert.equal(victim.status, 0, victim.stderr);
    writeFileSync(join(stateDir, 'marker'), SECRET);
    // The store, as any fix run or the editor's runner makes it.
    assert.equal(spawnSync(process.execPath, [RUNNER, 'runs', 'list'], { env: { ...process.env, FORGE_STATE_DIR: stateDir } }).status, 0);
  });
  after(() => {
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const probe = (dir: () => string) =>
    `ls -la ${dir()} 2>&1; cat ${dir()}/marker ${dir()}/forge.db ${dir()}/cells/* 2>&1 | grep -a -c ${SECRET}; true`;

  it('host: a cell lists an empty directory and reads none of it; the store is 0600', () => {
    const r = cellRun(
      stateDir,
      'host',
      work,
      probe(() => stateDir),
    );
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stdout.includes('forge.db') && !r.stdout.includes('marker'), r.stdout);
    assert.match(r.stdout, /^0$/m, `the secret is not readable: ${r.stdout}`);
    assert.equal(statSync(join(stateDir, 'forge.db')).mode & 0o777, 0o600);
  });

  it('qemu: the guest sees the same', function () {
    requireQemu(this);
    const r = cellRun(
      stateDir,
      'qemu',
      work,
      probe(() => stateDir),
    );
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stdout.includes('forge.db') && !r.stdout.includes('marker'), r.stdout);
    assert.match(r.stdout, /^0$/m, `the secret is not readable: ${r.stdout}`);
  });

  it('host: a PATH entry under the runner’s home (pipx’s ~/.local/bin) puts back that toolchain, not the home: no key, no store (red team round 3)', () => {
    const home = mkdtempSync('/home/forge-rt-home-');
    try {
      mkdirSync(join(home, '.local', 'bin'), { recursive: true });
      // Readable to the cell user, as a home is to its own user's cells when the runner is not root.
      mkdirSync(join(home, '.ssh'), { mode: 0o755 });
      writeFileSync(join(home, '.ssh', 'id_ed25519'), `${SECRET}\n`, { mode: 0o644 });
      writeFileSync(join(home, '.local', 'bin', 'mytool'), '#!/bin/sh\necho mytool-ran\n', { mode: 0o755 });
      chmodSync(home, 0o755);
      const r = spawnSync(
        process.execPath,
        [
          RUNNER,
          'cell',
          'run',
          '--provider',
          'host',
          '--no-diff',
          '--worktree',
          work,
          '--',
          `mytool; cat ${home}/.ssh/id_ed25519 2>&1; ls ${home} 2>&1; ls -d ${home}/.local/state 2>&1`,
        ],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            HOME: home,
            PATH: `${join(home, '.local', 'bin')}:${process.env.PATH}`,
            FORGE_STATE_DIR: join(home, '.local', 'state', 'forge-cells'),
          },
          timeout: 120_000,
        },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /mytool-ran/, 'the toolchain on PATH still works');
      assert.ok(!r.stdout.includes(SECRET), `the home's key stays hidden: ${r.stdout}`);
      assert.match(r.stdout, /\.local\/state'?: No such file or directory/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('host: a PATH entry in a directory that also holds tokens (~/.config/composer/vendor/bin beside ~/.config/gh) puts back only itself (red team round 4)', () => {
    const home = mkdtempSync('/home/forge-rt-home-');
    try {
      const bin = join(home, '.config', 'composer', 'vendor', 'bin');
      mkdirSync(bin, { recursive: true });
      mkdirSync(join(home, '.config', 'gh'), { recursive: true });
      writeFileSync(join(home, '.config', 'gh', 'hosts.yml'), `oauth_token: ${SECRET}\n`, { mode: 0o644 });
      writeFileSync(join(bin, 'composer-tool'), '#!/bin/sh\necho composer-tool-ran\n', { mode: 0o755 });
      chmodSync(home, 0o755);
      const r = spawnSync(
        process.execPath,
        [
          RUNNER,
          'cell',
          'run',
          '--provider',
          'host',
          '--no-diff',
          '--worktree',
          work,
          '--',
          `composer-tool; cat ${home}/.config/gh/hosts.yml 2>&1; true`,
        ],
        {
          encoding: 'utf8',
          env: { ...process.env, HOME: home, PATH: `${bin}:${process.env.PATH}`, FORGE_STATE_DIR: stateDir },
          timeout: 120_000,
        },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /composer-tool-ran/);
      assert.ok(!r.stdout.includes(SECRET), `the token beside the toolchain stays hidden: ${r.stdout}`);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
