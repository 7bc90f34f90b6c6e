// The VM pool's claims, each tried from inside a guest: a VM serves one cell, a guest reaches
// no other VM's hand-over share, and nothing of a pool outlives a killed runner.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { QemuCellProvider } from '../../runner/src/cells/providers/qemuCellProvider.js';
import { mountsUnder } from '../../runner/src/cells/qemu/handoverMounts.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { processesWith } from '../helpers/processes.js';
import { requireQemu } from '../helpers/qemu.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

async function until(what: string, ms: number, check: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('qemu VM pool (each test tries to break one claim)', function () {
  this.timeout(300_000);
  let stateDir: string;
  let provider: QemuCellProvider | null = null;

  beforeEach(function () {
    requireQemu(this);
    // Outside every masked directory on purpose: the VM directories must be hidden anyway.
    stateDir = mkdtempSync(join('/var/lib', 'forge-qemu-pool-'));
  });
  afterEach(async () => {
    await provider?.drain();
    provider = null;
    if (stateDir) {
      assert.deepEqual(mountsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), stateDir), [], 'no mount left under the state directory');
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('two consecutive cells never share a VM, even when the second comes from the warm pool', async () => {
    provider = new QemuCellProvider({ stateDir, env: { ...process.env, FORGE_QEMU_POOL: '1' } });
    const first = await provider.run({
      cmd: 'echo planted > /tmp/marker; echo planted > /var/marker; cat /proc/sys/kernel/random/boot_id',
    });
    assert.equal(first.exit_code, 0, first.output);
    await until('a warm VM', 120_000, () => provider!.poolCounts()?.ready === 1);
    // health sees the pools of this process, from any provider instance.
    const health = await new QemuCellProvider({ stateDir, env: { ...process.env, FORGE_QEMU_POOL: '1' } }).health();
    assert.match(health.details.pool ?? '', /1 VM\(s\) per shape within \d+ MiB: 1 ready, 0 booting/);
    const second = await provider.run({
      cmd: 'cat /tmp/marker /var/marker 2>/dev/null && echo MARKER-SURVIVED; cat /proc/sys/kernel/random/boot_id',
    });
    assert.equal(second.exit_code, 0, second.output);
    assert.doesNotMatch(second.output, /MARKER-SURVIVED|planted/);
    assert.notEqual(second.output.trim(), first.output.trim(), 'a different kernel boot');
    assert.match(second.output.trim(), /^[0-9a-f-]{36}$/);
  });

  it("a cell cannot reach another pooled VM's hand-over share (with that VM's worktree in it)", async () => {
    provider = new QemuCellProvider({ stateDir, env: { ...process.env, FORGE_QEMU_POOL: '2' } });
    const secret = makeRepo({ 'secret.txt': 'other-attempts-secret\n' });
    const probe = makeRepo({ 'a.txt': 'a\n' });
    let holder: Promise<unknown> | null = null;
    try {
      await provider.run({ cmd: 'true' });
      await until('two warm VMs', 180_000, () => provider!.poolCounts()?.ready === 2);
      const vms = join(stateDir, 'qemu', 'cells');
      // Readable on the host: only the VM directories' mask can hide them from the guest.
      for (const d of [stateDir, join(stateDir, 'qemu'), vms]) chmodSync(d, 0o755);
      // The other cell holds its VM (and its worktree in that VM's share) while the probe looks.
      const holding = provider.run({ worktree: secret.dir, cmd: 'sleep 25' });
      holder = holding.catch(() => undefined);
      await until('the holding cell to be handed over', 60_000, () =>
        readdirSync(vms).some((vm) => mountsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), join(vms, vm, 'share', 'w')).length > 0),
      );
      const look = await provider.run({
        worktree: probe.dir,
        cmd: [
          `ls -la ${vms} 2>&1`,
          `cat ${vms}/*/share/w/secret.txt 2>/dev/null && echo SAW-SECRET`,
          `grep -rsl other-attempts-secret /var/lib /srv /mnt 2>/dev/null | grep -q . && echo SAW-SECRET-SOMEWHERE`,
          'mkdir -p /tmp/m; for t in forge-work forge-root forge-dep0; do mount -t virtiofs $t /tmp/m 2>/dev/null && echo MOUNTED-$t; done',
          'exit 0',
        ].join('; '),
      });
      assert.equal(look.exit_code, 0, look.output);
      assert.doesNotMatch(look.output, /SAW-SECRET|other-attempts-secret|MOUNTED-/);
      assert.doesNotMatch(
        look.output,
        /vm-|Permission denied|No such file/,
        `the VM directories are hidden (an empty directory): ${look.output}`,
      );
      assert.equal((await holding).exit_code, 0);
    } finally {
      await holder;
      secret.cleanup();
      probe.cleanup();
    }
  });

  it('a killed runner leaves no qemu or virtiofsd of its pool running; gc unmounts and removes the rest (never the worktree)', async () => {
    const repo = makeRepo({ 'keep.txt': 'the user owns this\n' });
    const script = join(stateDir, 'pool-runner.mts');
    writeFileSync(
      script,
      [
        `import { QemuCellProvider } from ${JSON.stringify(join(process.cwd(), 'runner/src/cells/providers/qemuCellProvider.ts'))};`,
        `const p = new QemuCellProvider({ stateDir: ${JSON.stringify(stateDir)}, env: { ...process.env, FORGE_QEMU_POOL: '2' } });`,
        `await p.run({ cmd: 'true' });`,
        `await p.run({ worktree: ${JSON.stringify(repo.dir)}, cmd: 'sleep 600' });`,
      ].join('\n'),
    );
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: 'ignore' });
      const vms = join(stateDir, 'qemu', 'cells');
      const running = () => processesWith(vms).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('qemu-system'));
      // The sleeping cell's VM and the pool's two waiting ones.
      await until('three VMs', 240_000, () => running().length >= 3);
      assert.ok(processesWith(vms).some((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('virtiofsd')));
      await until('the worktree handed over', 60_000, () =>
        mountsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), vms).some((m) => m.endsWith('/share/w')),
      );
      child.kill('SIGKILL');
      await until('every VM process to end', 15_000, () => processesWith(vms).length === 0);
      const gc = spawn(process.execPath, [RUNNER, 'gc', '--repo', process.cwd(), '--json'], {
        env: { ...process.env, FORGE_STATE_DIR: stateDir },
      });
      let out = '';
      gc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => gc.once('exit', r));
      const items = (JSON.parse(out) as { items: Array<{ kind: string; action: string }> }).items.filter((i) => i.kind === 'vm');
      assert.ok(items.length >= 3 && items.every((i) => i.action === 'removed'), out);
      assert.deepEqual(readdirSync(vms), []);
      assert.equal(readFileSync(join(repo.dir, 'keep.txt'), 'utf8'), 'the user owns this\n', 'the worktree is intact');
    } finally {
      repo.cleanup();
    }
  });
});
