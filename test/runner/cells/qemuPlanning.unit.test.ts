import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpioArchive } from '../../../runner/src/cells/qemu/cpioArchive.js';
import { guestStartReport, parseGuestStatus, requestArchive } from '../../../runner/src/cells/qemu/guestImage.js';
import { buildQemuArgs, tscKhzFromCpuinfo } from '../../../runner/src/cells/qemu/qemuArgs.js';
import { requireFeature } from '../../helpers/requirement.js';

describe('qemu cell planning (pure)', () => {
  it('writes a newc archive that cpio reads back, files, dirs and symlinks with modes', function () {
    const archive = cpioArchive([
      { path: 'bin', kind: 'dir' },
      { path: 'bin/tool', kind: 'file', mode: 0o755, data: Buffer.from('#!/bin/sh\necho hi\n') },
      { path: 'bin/sh', kind: 'symlink', target: 'busybox' },
      { path: 'odd name.txt', kind: 'file', data: Buffer.from('x') },
    ]);
    assert.equal(archive.length % 4, 0);
    const listed = spawnSync('cpio', ['-itv'], { input: archive, encoding: 'utf8' });
    requireFeature(this, !listed.error, 'cpio is not installed (it comes with initramfs-tools)');
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /^drwxr-xr-x .* bin$/m);
    assert.match(listed.stdout, /^-rwxr-xr-x .* bin\/tool$/m);
    assert.match(listed.stdout, /^lrwxrwxrwx .* bin\/sh -> busybox$/m);
    assert.match(listed.stdout, /odd name\.txt$/m);
  });

  it('the request travels as a script of quoted words: environment, then the exact argv', () => {
    const a = requestArchive({
      mode: 'run',
      nonce: 'n1',
      env: { A: 'x y', B: "$(z)'" },
      argv: ['/bin/sh', '-c', 'echo "a b"; exit 3'],
      cwd: '/w',
      worktree: '/w',
      net: false,
      user: { uid: 65532, gid: 65532 },
    }).toString('latin1');
    const script = [
      "cd -- '/w' || exit 126",
      'unset PWD OLDPWD SHLVL PATH',
      "export A='x y'",
      "export B='$(z)'\\'''",
      `exec -- '/bin/sh' '-c' 'echo "a b"; exit 3'`,
    ].join('\n');
    assert.ok(a.includes(script), a);
    assert.ok(a.includes('forge/net'));
    assert.ok(a.includes('65532 65532\n'));
  });

  it('only a line with our nonce counts as a status', () => {
    assert.deepEqual(parseGuestStatus('forge-status abc exit 3\n', 'abc'), { kind: 'exit', code: 3 });
    assert.equal(parseGuestStatus('forge-status other exit 0\n', 'abc'), null);
    assert.equal(parseGuestStatus('hello forge-status abc exit 0\n', 'abc'), null);
    assert.deepEqual(parseGuestStatus('forge-status abc fail cannot mount\n', 'abc'), { kind: 'fail', reason: 'cannot mount' });
    assert.equal(parseGuestStatus('', 'abc'), null);
  });

  it("an instance has started once its boot's nonce says so (or says why not); another boot's word is no word", () => {
    assert.deepEqual(guestStartReport('forge-status abc started\n', 'abc'), { kind: 'started' });
    assert.deepEqual(guestStartReport('forge-status abc started\nforge-status abc exit 0\n', 'abc'), { kind: 'started' });
    assert.deepEqual(guestStartReport('forge-status abc fail cannot mount /\n', 'abc'), { kind: 'fail', reason: 'cannot mount /' });
    assert.equal(guestStartReport('forge-status old started\n', 'abc'), null);
    assert.equal(guestStartReport('', 'abc'), null);
  });

  it('a network device exists only with allow_net, and then reaches only the forwarded proxy', () => {
    const base = {
      accel: 'tcg' as const,
      kernel: '/k',
      initrd: '/i',
      memoryMib: 256,
      cpus: 1,
      tscKhz: 2100000,
      consoleLog: '/c',
      statusFile: '/s',
      outputSocket: '/o',
      shares: [{ tag: 'forge-root', socket: '/r.sock' }],
    };
    const plain = buildQemuArgs(base).join(' ');
    assert.doesNotMatch(plain, /netdev|virtio-net/);
    assert.match(plain, /-nodefaults/);
    assert.match(plain, /tsc_early_khz=2100000/);
    assert.match(plain, /memory-backend-memfd,id=mem,size=256M,share=on/);
    const net = buildQemuArgs({ ...base, egressProxyPort: 4567, busybox: '/bin/busybox' }).join(' ');
    assert.match(net, /user,id=net0,restrict=on,guestfwd=tcp:10\.0\.2\.100:3128-cmd:\/bin\/busybox nc 127\.0\.0\.1 4567/);
    assert.doesNotMatch(buildQemuArgs({ ...base, accel: 'kvm' }).join(' '), /tsc_early_khz/);
    assert.equal(tscKhzFromCpuinfo('processor\t: 0\ncpu MHz\t\t: 2100.000\n'), 2100000);
  });
});
