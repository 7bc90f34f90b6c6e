import assert from 'node:assert/strict';
import { ancestorsBelowMasks, buildBubblewrapArgs } from '../../../runner/src/cells/bubblewrapArgs.js';
import { chooseCellUser, dedicatedCellUser } from '../../../runner/src/hostguard/cellUser.js';
import { fdinfoFlags } from '../../../runner/src/hostguard/inheritedDescriptors.js';
import { virtiofsdInodeBudget } from '../../../runner/src/cells/qemu/qemuRuntime.js';
import { refuseWorktreeLocation } from '../../../runner/src/hostguard/worktreeLocation.js';
import { printable } from '../../../runner/src/cli/formatCellResult.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';

describe('cell safety decisions (pure)', () => {
  it("chooses the cell user: the runner's own, or for a root runner always the dedicated user", () => {
    const base = { runnerGid: 0, worktree: '/w', env: {} };
    assert.deepEqual(
      [chooseCellUser({ ...base, runnerUid: 1000, runnerGid: 1000, worktreeOwner: { uid: 0, gid: 0 } })].map((u) => [u.uid, u.gid]),
      [[1000, 1000]],
    );
    const owner = chooseCellUser({ ...base, runnerUid: 0, worktreeOwner: { uid: 1001, gid: 1002 } });
    assert.deepEqual([owner.uid, owner.gid], [65532, 65532]);
    assert.match(owner.warning ?? '', /owned by uid 1001.*chown -R 65532:65532 \/w and then chown -R 1001:1002 \/w\/\.git/);
    const rootOwned = chooseCellUser({ ...base, runnerUid: 0, worktreeOwner: { uid: 0, gid: 0 } });
    assert.deepEqual([rootOwned.uid, rootOwned.gid], [65532, 65532]);
    assert.match(rootOwned.warning ?? '', /owned by uid 0/);
    const cellOwned = chooseCellUser({ ...base, runnerUid: 0, worktreeOwner: { uid: 65532, gid: 65532 } });
    assert.equal(cellOwned.warning, null);
    const scratch = chooseCellUser({ ...base, runnerUid: 0, worktreeOwner: null, worktree: null });
    assert.deepEqual([scratch.uid, scratch.warning], [65532, null]);
    assert.deepEqual(dedicatedCellUser({ FORGE_CELL_UID: '4000', FORGE_CELL_GID: '4001' }), { uid: 4000, gid: 4001 });
    for (const bad of ['0', '-1', 'root', '1.5', '99999999999'])
      assert.throws(() => dedicatedCellUser({ FORGE_CELL_UID: bad }), InputError, bad);
  });

  it('refuses worktrees over /, system trees, the runner home and state, and anything containing a mask', () => {
    const facts = {
      masked: ['/tmp', '/root', '/home', '/run', '/etc/shadow'],
      runnerHome: '/root',
      stateDir: '/root/.local/state/forge-cells',
    };
    for (const p of [
      '/',
      '/etc',
      '/etc/ssh',
      '/usr',
      '/usr/lib/x',
      '/proc/1',
      '/run/user',
      '/tmp',
      '/home',
      '/root',
      '/root/.local',
      '/root/.local/state/forge-cells/cells',
      '/var',
      '/var/lib/docker',
    ]) {
      assert.ok(refuseWorktreeLocation(p, facts), p);
    }
    for (const p of ['/tmp/repo', '/home/alice/src/app', '/root/src/app', '/srv/ci/work', '/var/lib/jenkins/workspace/x', '/opt/app']) {
      assert.equal(refuseWorktreeLocation(p, facts), null, p);
    }
  });

  it("a root runner's bwrap makes no user namespace and switches to the cell user with setpriv, last", () => {
    const layout = { tmpfsMasks: ['/tmp', '/root'], nullMasks: [], reexposed: [] };
    const args = buildBubblewrapArgs({
      layout,
      worktree: '/w',
      gitMetadata: '/w/.git',
      env: { PATH: '/bin' },
      argv: ['make'],
      dropTo: { uid: 65532, gid: 65533, setpriv: '/usr/bin/setpriv' },
    });
    assert.ok(!args.includes('--unshare-all') && !args.includes('--unshare-user'));
    for (const f of ['--unshare-pid', '--unshare-net', '--unshare-ipc']) assert.ok(args.includes(f), f);
    const dd = args.indexOf('--');
    // The command's environment only after the switch: setpriv (root) sees PATH alone.
    assert.deepEqual(args.slice(dd + 1), [
      '/usr/bin/setpriv',
      '--reuid=65532',
      '--regid=65533',
      '--clear-groups',
      '--no-new-privs',
      '--inh-caps=-all',
      '--',
      '/usr/bin/env',
      '-i',
      'PATH=/bin',
      'make',
    ]);
    // A program whose name env would take for a variable goes through sh, which keeps it a name.
    const odd = buildBubblewrapArgs({
      layout,
      worktree: null,
      gitMetadata: null,
      env: { PATH: '/bin' },
      argv: ['A=b'],
      dropTo: { uid: 65532, gid: 65533, setpriv: '/usr/bin/setpriv' },
    });
    assert.deepEqual(odd.slice(odd.indexOf('-i') + 1), ['PATH=/bin', '/bin/sh', '-c', 'exec "$@"', 'forge-cell', 'A=b']);
    const setenvs = args.flatMap((a, i) => (a === '--setenv' ? [args[i + 1]] : []));
    assert.deepEqual(setenvs, ['PATH']);
    // The last mount puts the host's own setpriv back, whatever a mount above covered.
    const lastBind = args.lastIndexOf('--ro-bind');
    assert.deepEqual(args.slice(lastBind, lastBind + 3), ['--ro-bind', '/usr/bin/setpriv', '/usr/bin/setpriv']);
    const seq = (xs: string[]) => args.some((_, i) => xs.every((x, j) => args[i + j] === x));
    assert.ok(seq(['--perms', '1777', '--tmpfs', '/tmp']), 'the cell user can write /tmp');
    assert.ok(seq(['--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID']), 'setpriv can switch');
    const plain = buildBubblewrapArgs({ layout, worktree: null, gitMetadata: null, env: {}, argv: ['true'] });
    assert.ok(plain.includes('--unshare-all'));
    assert.deepEqual(plain.slice(plain.indexOf('--') + 1), ['true']);
  });

  it('a worktree held open is bound by its descriptor names, at the paths the cell knows', () => {
    const args = buildBubblewrapArgs({
      layout: { tmpfsMasks: [], nullMasks: [], reexposed: [] },
      worktree: '/w',
      gitMetadata: '/w/.git',
      worktreeTarget: '/repo',
      held: { top: '/proc/7/fd/20', git: '/proc/7/fd/21' },
      env: {},
      argv: ['true'],
    });
    const seq = (xs: string[]) => args.some((_, i) => xs.every((x, j) => args[i + j] === x));
    assert.ok(seq(['--bind', '/proc/7/fd/20', '/repo']));
    assert.ok(seq(['--ro-bind', '/proc/7/fd/21', '/repo/.git']));
    assert.ok(!args.includes('/w'), 'the worktree path itself is never given to bwrap');
  });

  it('makes the parents of a worktree below a mask traversable (bwrap would make them 0700)', () => {
    assert.deepEqual(ancestorsBelowMasks('/tmp/repo/.git/forge-cells/x', ['/tmp', '/root']), [
      '/tmp/repo',
      '/tmp/repo/.git',
      '/tmp/repo/.git/forge-cells',
    ]);
    assert.deepEqual(ancestorsBelowMasks('/tmp/repo', ['/tmp']), []);
    assert.deepEqual(ancestorsBelowMasks('/srv/repo/x', ['/tmp']), []);
    assert.deepEqual(ancestorsBelowMasks('/home/alice/src/app', ['/home', '/home/alice']), ['/home/alice/src']);
  });

  it('reads close-on-exec from fdinfo', () => {
    assert.equal(fdinfoFlags('pos:\t0\nflags:\t02100002\nmnt_id:\t1\n'), 0o2100002);
    assert.equal(fdinfoFlags('nothing'), null);
  });

  it('virtiofsd inode budget is half its descriptor limit', () => {
    assert.equal(virtiofsdInodeBudget('Max open files            20000                20000                files\n'), 10000);
    assert.equal(virtiofsdInodeBudget('Max open files            1024                 524288               files\n'), 262144);
    assert.equal(virtiofsdInodeBudget(''), 512);
  });

  it('printable shows control characters as \\xNN and keeps newlines, tabs and text', () => {
    assert.equal(printable('a\tb\nc\u001b[31md\u0007\r\u009b'), 'a\tb\nc\\x1b[31md\\x07\\x0d\\x9b');
    assert.equal(printable('héllo ✓'), 'héllo ✓');
  });
});
