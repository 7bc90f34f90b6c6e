import assert from 'node:assert/strict';
import { parseGuestStatus, requestArchive } from '../../../runner/src/cells/qemu/guestImage.js';
import { mountsUnder } from '../../../runner/src/cells/qemu/handoverMounts.js';
import { buildQemuArgs } from '../../../runner/src/cells/qemu/qemuArgs.js';
import { shapeKey, type VmShape } from '../../../runner/src/cells/qemu/microVm.js';
import { poolSettings, vmsToBoot } from '../../../runner/src/cells/qemu/vmPool.js';

const machine = { cores: 2, memoryMib: 24_000 };

describe('qemu VM pool planning (pure)', () => {
  it('sizes the pool from the machine, the environment and the caller, and refuses nonsense in one line', () => {
    assert.deepEqual(poolSettings({}, machine, undefined), { size: 2, budgetMib: 6000 });
    assert.deepEqual(poolSettings({}, { cores: 16, memoryMib: 64_000 }, undefined), { size: 4, budgetMib: 16_000 });
    assert.deepEqual(poolSettings({ FORGE_QEMU_POOL: '3', FORGE_QEMU_POOL_MEMORY_MIB: '2048' }, machine, undefined), {
      size: 3,
      budgetMib: 2048,
    });
    assert.deepEqual(poolSettings({ FORGE_QEMU_POOL: '0' }, machine, 4), { size: 0, budgetMib: 6000 });
    // A one-shot CLI cell has nothing to boot ahead for, whatever the environment says.
    assert.deepEqual(poolSettings({ FORGE_QEMU_POOL: '8' }, machine, 0), { size: 0, budgetMib: 6000 });
    assert.deepEqual(poolSettings({}, machine, 1), { size: 1, budgetMib: 6000 });
    for (const bad of ['-1', 'lots', '1.5', '65']) {
      const r = poolSettings({ FORGE_QEMU_POOL: bad }, machine, undefined);
      assert.ok('error' in r && /FORGE_QEMU_POOL=.* 0 turns the pool off/.test(r.error), bad);
    }
    const r = poolSettings({ FORGE_QEMU_POOL_MEMORY_MIB: 'x' }, machine, undefined);
    assert.ok('error' in r && /FORGE_QEMU_POOL_MEMORY_MIB=x/.test(r.error));
  });

  it('boots what is missing, within the memory budget', () => {
    assert.equal(vmsToBoot({ size: 4, budgetMib: 10_000 }, 1, 2048, 2048), 3);
    assert.equal(vmsToBoot({ size: 4, budgetMib: 5000 }, 1, 2048, 2048), 1);
    assert.equal(vmsToBoot({ size: 2, budgetMib: 10_000 }, 2, 2048, 4096), 0);
    assert.equal(vmsToBoot({ size: 0, budgetMib: 10_000 }, 0, 256, 0), 0);
    // Below the guest's minimum, a VM still takes the minimum.
    assert.equal(vmsToBoot({ size: 8, budgetMib: 512 }, 0, 16, 0), 2);
  });

  it("VMs serve each other's cells only when everything fixed at boot is equal", () => {
    const base: VmShape = { rootDir: null, memoryMib: 2048, cpus: 1, egressPort: null, deps: [], inodeBudget: 500 };
    assert.equal(shapeKey(base), shapeKey({ ...base }));
    for (const other of [
      { ...base, rootDir: '/img' },
      { ...base, memoryMib: 1024 },
      { ...base, cpus: 2 },
      { ...base, egressPort: 3128 },
      { ...base, deps: [{ tag: 'forge-dep0', source: '/repo/node_modules' }] },
    ])
      assert.notEqual(shapeKey(base), shapeKey(other));
  });

  it('a pooled boot carries no command; its VM gets a request port; "waiting" is framed by the boot nonce', () => {
    const boot = requestArchive({ mode: 'pool', nonce: 'n1', env: { A: 'b' }, argv: ['rm', '-rf', '/'], cwd: '/', worktree: null });
    assert.ok(boot.includes(Buffer.from('pool')));
    assert.ok(!boot.includes(Buffer.from('rm')), 'no command in a pooled boot');
    const args = buildQemuArgs({
      accel: 'tcg',
      kernel: '/k',
      initrd: '/i',
      memoryMib: 256,
      cpus: 1,
      tscKhz: null,
      consoleLog: '/c',
      statusFile: '/s',
      outputSocket: '/o.sock',
      requestSocket: '/r.sock',
      shares: [],
    });
    assert.ok(args.includes('virtserialport,chardev=request,name=forge.request'));
    assert.deepEqual(parseGuestStatus('forge-status n1 waiting\n', 'n1'), { kind: 'waiting' });
    assert.equal(parseGuestStatus('forge-status n2 waiting\n', 'n1'), null);
  });

  it('finds every mount under a VM directory (escaped names too), deepest first, and nothing beside it', () => {
    const info = [
      '22 1 0:21 / / rw - ext4 /dev/vda rw',
      '40 22 0:21 /s/vm-1/share /s/vm-1/share rw shared:9 - ext4 /dev/vda rw',
      '41 40 0:21 /home/me/repo /s/vm-1/share/w rw shared:10 - ext4 /dev/vda rw',
      '42 41 0:21 /home/me/repo/.git /s/vm-1/share/w/.git ro shared:11 - ext4 /dev/vda rw',
      '43 22 0:21 /x /s/vm-10/share rw - ext4 /dev/vda rw',
      '44 22 0:21 /y /s/vm-1/share/with\\040space rw - ext4 /dev/vda rw',
    ].join('\n');
    assert.deepEqual(mountsUnder(info, '/s/vm-1'), [
      '/s/vm-1/share/with space',
      '/s/vm-1/share/w/.git',
      '/s/vm-1/share/w',
      '/s/vm-1/share',
    ]);
    assert.deepEqual(mountsUnder(info, '/s/vm-2'), []);
  });
});
