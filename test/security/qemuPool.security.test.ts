// The VM pool's claims, each tried from inside a guest: a VM serves one cell, a guest reaches
// no other VM's hand-over share, and nothing of a pool outlives a killed runner.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { QemuCellProvider } from '../../runner/src/cells/providers/qemuCellProvider.js';
import { mountOptions, mountsUnder, mountWorktree, prepareVmMounts, removeVmDir } from '../../runner/src/cells/qemu/handoverMounts.js';
import { requireFeature } from '../helpers/requirement.js';
import { spawnSync } from 'node:child_process';
import { makeRepo } from '../helpers/gitRepo.js';
import { cmdlineOf, processesWith } from '../helpers/processes.js';
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
      // Hidden with the whole state directory (an empty tmpfs): no VM directory is listed.
      assert.doesNotMatch(look.output, /vm-|Permission denied/, `the VM directories are hidden: ${look.output}`);
      assert.match(look.output, /No such file or directory|total 0/, `the VM directories are hidden: ${look.output}`);
      assert.equal((await holding).exit_code, 0);
    } finally {
      await holder;
      secret.cleanup();
      probe.cleanup();
    }
  });

  it("a world-writable .git stays read-only inside the VM (the read-only mount reaches the VM's side)", async () => {
    provider = new QemuCellProvider({ stateDir, env: { ...process.env, FORGE_QEMU_POOL: '1' } });
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      spawnSync('chmod', ['-R', 'a+rwX', repo.dir]);
      const before = readFileSync(join(repo.dir, '.git', 'config'), 'utf8');
      for (let i = 0; i < 2; i++) {
        // The first cell boots its VM, the second comes from the pool.
        // No diff: with one, git data others can write is refused before the cell.
        const r = await provider.run({
          worktree: repo.dir,
          capture_diff: false,
          cmd: 'echo "[core] fsmonitor = evil" >> .git/config && echo WROTE-CONFIG; touch .git/PWNED && echo WROTE-GIT; echo ok > a.txt; exit 0',
        });
        assert.doesNotMatch(r.output, /WROTE-/, r.output);
        assert.match(r.output, /Read-only file system/);
        assert.equal(readFileSync(join(repo.dir, 'a.txt'), 'utf8'), 'ok\n', 'the worktree itself is writable');
      }
      assert.equal(readFileSync(join(repo.dir, '.git', 'config'), 'utf8'), before);
    } finally {
      repo.cleanup();
    }
  });

  it('a state directory reached through a symlink: cells run and nothing stays mounted', async () => {
    const link = `${stateDir}-link`;
    symlinkSync(stateDir, link);
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      provider = new QemuCellProvider({ stateDir: link, env: { ...process.env, FORGE_QEMU_POOL: '1' } });
      const r = await provider.run({ worktree: repo.dir, cmd: 'cat a.txt' });
      assert.equal(r.exit_code, 0, r.output + r.isolation.warnings.join('; '));
      assert.deepEqual(
        r.isolation.warnings.filter((w) => /left|mount/.test(w)),
        [],
      );
    } finally {
      await provider?.drain();
      provider = null;
      rmSync(link);
      repo.cleanup();
    }
  });

  it('a pooled VM that dies while it boots is never given to a cell: the cell runs on another', async () => {
    provider = new QemuCellProvider({ stateDir, env: { ...process.env, FORGE_QEMU_POOL: '1' } });
    const vms = join(stateDir, 'qemu', 'cells');
    const qemus = () => processesWith(vms).filter((p) => cmdlineOf(p).split('\0')[0]!.endsWith('qemu-system-x86_64'));
    const first = provider.run({ cmd: 'sleep 1' });
    // The refill boots once the first cell's VM waits: stopped at once, it cannot finish booting.
    let firstVm = 0;
    let refill = 0;
    await until('the pool to boot its replacement', 120_000, () => {
      for (const p of qemus()) {
        if (firstVm === 0) firstVm = p;
        else if (p !== firstVm) refill = p;
      }
      return refill !== 0;
    });
    process.kill(refill, 'SIGSTOP');
    assert.equal((await first).exit_code, 0);
    assert.equal(provider.poolCounts()?.booting, 1, 'the stopped VM waits in the pool, still booting');
    const second = provider.run({ cmd: 'echo ran' });
    // The cell has taken the booting VM; it dies before it ever reports.
    await until('the cell to take the booting VM', 10_000, () => provider!.poolCounts()?.booting !== 1 || qemus().length > 1);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(refill, 'SIGKILL');
    const r = await second;
    assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
    assert.equal(r.output.trim(), 'ran');
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
      const running = () => processesWith(vms).filter((p) => cmdlineOf(p).includes('qemu-system'));
      // The sleeping cell's VM and the pool's two waiting ones.
      await until('three VMs', 240_000, () => running().length >= 3);
      assert.ok(processesWith(vms).some((p) => cmdlineOf(p).includes('virtiofsd')));
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

describe('qemu hand-over mounts (host side; the worktree is hostile input)', function () {
  let dir: string;
  beforeEach(function () {
    requireFeature(this, process.getuid?.() === 0, 'hand-over mounts need root (as qemu cells do)');
    dir = mkdtempSync(join('/var/lib', 'forge-handover-'));
  });
  afterEach(() => {
    if (!dir) return;
    assert.equal(removeVmDir(join(dir, 'vm')), null);
    assert.deepEqual(mountsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), dir), []);
    rmSync(dir, { recursive: true, force: true });
  });

  const layout = () => {
    const vm = join(dir, 'vm');
    const share = join(vm, 'share');
    mkdirSync(join(share, 'w'), { recursive: true });
    prepareVmMounts(vm, share);
    return { vm, share, stage: join(vm, 'stage'), target: join(share, 'w') };
  };

  it("the worktree lands at w/ with its .git read-only there, and the user's own tree is untouched", () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const l = layout();
      mountWorktree(repo.dir, undefined, l.stage, l.target);
      const info = readFileSync('/proc/self/mountinfo', 'utf8');
      assert.ok(mountOptions(info, join(l.target, '.git'))?.includes('ro'));
      assert.equal(readFileSync(join(l.target, 'a.txt'), 'utf8'), 'a\n');
      assert.equal(mountsUnder(info, repo.dir).length, 0, "nothing is mounted over the user's own paths");
    } finally {
      assert.equal(removeVmDir(join(dir, 'vm')), null);
      assert.equal(readFileSync(join(repo.dir, 'a.txt'), 'utf8'), 'a\n');
      repo.cleanup();
    }
  });

  it('a .git that is a symlink (to / or up the tree) is refused: nothing is mounted anywhere else', () => {
    for (const to of ['/', '../../..']) {
      const repo = makeRepo({ 'a.txt': 'a\n' });
      try {
        renameSync(join(repo.dir, '.git'), join(repo.dir, '.git-real'));
        symlinkSync(to, join(repo.dir, '.git'));
        const l = layout();
        const before = new Set(readFileSync('/proc/self/mountinfo', 'utf8').split('\n'));
        assert.throws(() => mountWorktree(repo.dir, undefined, l.stage, l.target), /symlink|neither a directory nor a file/);
        const added = readFileSync('/proc/self/mountinfo', 'utf8')
          .split('\n')
          .filter((line) => !before.has(line) && !line.split(' ')[4]?.startsWith(l.stage));
        assert.deepEqual(added, [], 'no mount appeared anywhere but the staging directory');
      } finally {
        assert.equal(removeVmDir(join(dir, 'vm')), null);
        repo.cleanup();
      }
    }
  });

  it('a parent swapped for a link, or the worktree swapped for another directory, since the check is refused', () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, 'proj'), { recursive: true });
    const secret = makeRepo({ 'secret.txt': 'root only\n' });
    try {
      // The worktree as checked: home/proj/wt.
      const wt = join(home, 'proj', 'wt');
      mkdirSync(wt);
      const { dev, ino } = statSync(wt);
      const l = layout();
      // A parent becomes a link to somewhere else holding a "wt".
      renameSync(join(home, 'proj'), join(home, 'proj.real'));
      mkdirSync(join(dir, 'decoy'));
      renameSync(secret.dir, join(dir, 'decoy', 'wt'));
      symlinkSync(join(dir, 'decoy'), join(home, 'proj'));
      assert.throws(() => mountWorktree(wt, { dev, ino }, l.stage, l.target), /changed since it was checked/);
      // A real directory now, but not the one checked.
      rmSync(join(home, 'proj'));
      renameSync(join(dir, 'decoy'), join(home, 'proj'));
      assert.throws(() => mountWorktree(wt, { dev, ino }, l.stage, l.target), /not the directory that was checked/);
      assert.deepEqual(mountsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), join(dir, 'vm', 'share', 'w')), []);
      renameSync(join(home, 'proj', 'wt'), secret.dir);
    } finally {
      secret.cleanup();
    }
  });

  it('a worktree path that is itself a symlink is refused', () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const link = join(dir, 'link');
    try {
      symlinkSync(repo.dir, link);
      const l = layout();
      assert.throws(() => mountWorktree(link, undefined, l.stage, l.target), /changed since it was checked/);
    } finally {
      repo.cleanup();
    }
  });
});
