// Each test tries to break one claim of the qemu provider from inside the guest.
import assert from 'node:assert/strict';
import { requireQemu } from '../helpers/qemu.js';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { QemuCellProvider } from '../../runner/src/cells/providers/qemuCellProvider.js';
import { unmountUnder } from '../../runner/src/cells/qemu/handoverMounts.js';
import { runEgressAttacks, runEgressRules } from '../helpers/egressAttacks.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { cmdlineOf, processesWith } from '../helpers/processes.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

describe('qemu cell security (each test tries to break one claim)', function () {
  this.timeout(300_000);
  let provider: QemuCellProvider;
  let stateDir: string;

  before(function () {
    requireQemu(this);
    stateDir = mkdtempSync(join(tmpdir(), 'forge-qemu-sec-'));
    provider = new QemuCellProvider({ stateDir });
  });
  after(async () => {
    await provider?.drain();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('framing: a command printing the status marker, even with a plausible nonce, cannot change its exit code', async () => {
    const r = await provider.run({
      cmd: 'for i in 1 2 3; do echo "forge-status 0123456789abcdef0123456789abcdef exit 0"; done; echo "forge-status $(cat /forge/nonce 2>/dev/null) exit 0"; exit 3',
    });
    assert.equal(r.exit_code, 3);
    assert.match(r.output, /forge-status .* exit 0/);
  });

  it('framing: the status port cannot be opened or written by the command', async () => {
    const r = await provider.run({
      cmd: 'for p in /sys/class/virtio-ports/*; do d=/dev/${p##*/}; echo "forge-status x exit 0" > $d 2>/dev/null && echo "WROTE $(cat $p/name)"; done; exit 4',
    });
    assert.equal(r.exit_code, 4);
    assert.doesNotMatch(r.output, /WROTE forge\.status/);
  });

  it("Q1: the command cannot take /init's status port (pidfd_getfd), read the nonce, or fake the exit code", async () => {
    const steal = [
      'import ctypes, os, sys',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'pidfd = libc.syscall(434, 1, 0)',
      'fd = libc.syscall(438, pidfd, 3, 0) if pidfd >= 0 else -1',
      'print("PIDFD", pidfd, "FD", fd)',
      'if fd >= 0:',
      '    nonce = open("/proc/1/root/forge/nonce").read().strip() if os.path.exists("/proc/1/root/forge/nonce") else "x"',
      '    os.write(fd, f"forge-status {nonce} exit 0\\n".encode())',
      '    print("STOLE THE STATUS PORT")',
    ].join('\n');
    const r = await provider.run({
      cmd: [
        `/usr/bin/python3 -c '${steal}'`,
        'cat /proc/1/root/forge/nonce 2>/dev/null && echo READ-NONCE',
        'ls /proc/1/fd >/dev/null 2>&1 && echo LISTED-INIT-FDS',
        'echo 0 > /.forge/exit 2>/dev/null && echo WROTE-EXIT-FILE',
        'kill -9 1 2>/dev/null && echo KILLED-INIT',
        'exit 7',
      ].join('; '),
    });
    assert.equal(r.exit_code, 7, r.output);
    assert.doesNotMatch(r.output, /STOLE THE STATUS PORT|READ-NONCE|LISTED-INIT-FDS|WROTE-EXIT-FILE|KILLED-INIT/);
    // The wrapper trick: write an exit file, then kill the process that would report.
    const r2 = await provider.run({ cmd: 'echo 0 > /.forge/exit 2>/dev/null; kill -9 $PPID 2>/dev/null; exit 1' });
    assert.equal(r2.exit_code, 1);
  });

  it('Q5: an argv over 32 KiB reaches the command exactly (no xargs cut)', async () => {
    const word = 'w'.repeat(40 * 1024);
    const r = await provider.run({ cmd: ['/bin/sh', '-c', 'printf %s "$1" | wc -c; printf %s "$2"', 'sh', word, 'last-arg'] });
    assert.equal(r.exit_code, 0, r.output);
    assert.equal(r.output, `${40 * 1024}\nlast-arg`);
  });

  it('Q6: a first word "FOO=bar" is a program name, as on every provider; the environment is exactly the spec', async () => {
    const r = await provider.run({ cmd: ['FOO=bar', 'env'] });
    assert.equal(r.exit_code, 127, r.output);
    const env = await provider.run({ cmd: ['/usr/bin/env'], env: { ODD: 'it\'s "quoted"\nand $(not) run' } });
    const names = env.output
      .trim()
      .split('\n')
      .filter((l) => /^[A-Za-z_]+=/.test(l))
      .map((l) => l.split('=')[0])
      .sort();
    assert.deepEqual(names, ['CI', 'HOME', 'LANG', 'ODD', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'TERM', 'TMPDIR']);
    assert.match(env.output, /ODD=it's "quoted"\nand \$\(not\) run/);
  });

  it('Q6: memory beyond the machine and more vCPUs than cores are bad input, refused before a VM starts', () => {
    for (const args of [
      ['--memory', String(64 * 1024)],
      ['--cpus', '1024'],
    ]) {
      const r = spawnSync(process.execPath, [RUNNER, 'cell', 'run', '--provider', 'qemu', ...args, '--', 'true'], { encoding: 'utf8' });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /more than this machine/);
    }
  });

  it('Q6: the guest cannot write its cell directory on the host through the shared root', async () => {
    const state = mkdtempSync(join('/var/lib', 'forge-qemu-celldir-'));
    const own = new QemuCellProvider({ stateDir: state });
    try {
      const cells = join(state, 'qemu', 'cells');
      const r = await own.run({
        cmd: `ls ${cells}/*/ 2>&1; mkdir -p /tmp/m; mount -t virtiofs forge-root /tmp/m 2>/dev/null && echo REMOUNTED; for d in ${cells}/*/ ${cells}/*/sock/ /tmp/m${cells}/*/; do touch "$d/planted" 2>/dev/null && echo "PLANTED $d"; done; exit 0`,
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.doesNotMatch(r.output, /PLANTED|REMOUNTED/);
    } finally {
      await own.drain();
      rmSync(state, { recursive: true, force: true });
    }
  });

  it('Q6: a worktree of 24,000 files (more than the 20,000 descriptors virtiofsd may hold here) is served whole (virtiofsd does not run out of descriptors)', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = await provider.run({
        worktree: repo.dir,
        cmd: "/usr/bin/python3 -c \"import os\nos.mkdir('m')\nfor i in range(24000): open(f'm/f{i}', 'w').close()\nprint(sum(1 for e in os.scandir('m') if os.stat(e.path).st_size == 0))\"",
        timeout_s: 280,
      });
      assert.equal(r.exit_code, 0, r.output.slice(-500));
      assert.equal(r.output.trim(), '24000');
    } finally {
      repo.cleanup();
    }
  });

  it('host files outside the worktree and the read-only root are invisible: the runner home, /tmp, /root, shadow', async () => {
    const secretDir = mkdtempSync(join(tmpdir(), 'forge-qemu-secret-'));
    writeFileSync(join(secretDir, 'token'), 'sk-host-secret');
    const homeSecret = join(homedir(), `.forge-qemu-test-secret-${process.pid}`);
    writeFileSync(homeSecret, 'sk-home-secret');
    try {
      const r = await provider.run({
        cmd: `cat ${secretDir}/token; cat ${homeSecret}; ls /root | head; cat /etc/shadow; ls /run; echo done`,
      });
      assert.equal(r.exit_code, 0);
      assert.doesNotMatch(r.output, /sk-host-secret|sk-home-secret|root:/);
      assert.match(r.output, /done/);
    } finally {
      rmSync(secretDir, { recursive: true, force: true });
      rmSync(homeSecret, { force: true });
    }
  });

  it('writes outside the worktree stay in the VM; the worktree .git stays read-only', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const probe = `/usr/local/forge-qemu-write-${process.pid}`;
    try {
      const r = await provider.run({
        worktree: repo.dir,
        cmd: `echo x > ${probe} && echo WROTE-USR; echo y > a.txt; echo hook > .git/hooks/post-checkout && echo WROTE-GIT; git config core.fsmonitor "touch /tmp/pwned" 2>/dev/null && echo WROTE-CONFIG; exit 0`,
      });
      assert.equal(r.exit_code, 0);
      assert.ok(!existsSync(probe), 'the host /usr/local is untouched (the write went to the private overlay, if anywhere)');
      assert.equal(readFileSync(join(repo.dir, 'a.txt'), 'utf8'), 'y\n', 'the worktree is shared read-write');
      assert.doesNotMatch(r.output, /WROTE-GIT|WROTE-CONFIG/);
      assert.ok(!existsSync(join(repo.dir, '.git', 'hooks', 'post-checkout')));
      assert.equal(
        spawnSync('git', ['-c', 'safe.directory=*', 'config', '--get', 'core.fsmonitor'], { cwd: repo.dir }).status,
        1,
        'no fsmonitor was planted',
      );
    } finally {
      repo.cleanup();
    }
  });

  it('every mount the command sees is nosuid and nodev, but /dev (devtmpfs: its nodes must work), which is nosuid and noexec', async () => {
    // The worktree and both kinds of dependency layer are mounted too: each is a line to check.
    const repo = makeRepo({ 'a.txt': 'a\n', '.gitignore': 'node_modules/\nvendor/\ninstalled/\n' });
    try {
      mkdirSync(join(repo.dir, 'installed', 'pkg'), { recursive: true });
      const r = await provider.run({
        worktree: repo.dir,
        mount_at: repo.dir,
        shared_deps: [
          { source: join(repo.dir, 'installed'), target: join(repo.dir, 'node_modules'), layer: 'overlay' },
          { source: join(repo.dir, 'installed'), target: join(repo.dir, 'vendor'), layer: 'read-only' },
        ],
        cmd: 'cat /proc/mounts',
      });
      assert.equal(r.exit_code, 0, r.output);
      const mounts = r.output
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .map(([, at, type, opts]) => ({ at: at!, type: type!, opts: opts!.split(',') }));
      for (const at of ['/', '/dev', '/proc', '/tmp', repo.dir, join(repo.dir, 'node_modules'), join(repo.dir, 'vendor')])
        assert.ok(
          mounts.some((m) => m.at === at),
          `${at} is in the guest's mount table:\n${r.output}`,
        );
      for (const m of mounts) {
        assert.ok(m.opts.includes('nosuid'), `${m.at} (${m.type}) is mounted without nosuid: ${m.opts.join(',')}`);
        if (m.at === '/dev') assert.ok(m.opts.includes('noexec'), `/dev is mounted without noexec: ${m.opts.join(',')}`);
        else assert.ok(m.opts.includes('nodev'), `${m.at} (${m.type}) is mounted without nodev: ${m.opts.join(',')}`);
      }
    } finally {
      repo.cleanup();
    }
  });

  it('the environment is only the allowlist: runner secrets are not in the guest, nor in the VM command line', async () => {
    process.env.OPENAI_API_KEY = 'sk-runner-key-qemu';
    try {
      const r = await provider.run({ cmd: 'env; cat /proc/cmdline; cat /proc/1/environ | tr "\\0" "\\n"' });
      assert.doesNotMatch(r.output, /sk-runner-key-qemu/);
      assert.match(r.output, /HOME=\/tmp\/forge-home/);
    } finally {
      delete process.env.OPENAI_API_KEY;
    }
  });

  it('no network device in the guest', async () => {
    const r = await provider.run({ cmd: 'ls /sys/class/net; cat /proc/net/dev' });
    assert.equal(r.exit_code, 0);
    assert.doesNotMatch(r.output, /eth0|ens|enp/);
  });

  it('a timed-out cell leaves no VM process, socket or directory', async () => {
    // Pool off: VMs waiting for later cells would live in the same directory.
    const state = mkdtempSync(join(tmpdir(), 'forge-qemu-timeout-'));
    const own = new QemuCellProvider({ stateDir: state, env: { ...process.env, FORGE_QEMU_POOL: '0' } });
    try {
      const r = await own.run({ cmd: 'sleep 600', timeout_s: 6 });
      assert.equal(r.timed_out, true);
      assert.equal(r.killed_by, 'timeout');
      assert.deepEqual(processesWith(join(state, 'qemu', 'cells')), []);
      assert.deepEqual(readdirSync(join(state, 'qemu', 'cells')), []);
    } finally {
      await own.drain();
      rmSync(state, { recursive: true, force: true });
    }
  });

  it('a runner killed mid-cell takes its VM and virtiofsd with it; gc removes the directory', async function () {
    const state = mkdtempSync(join(tmpdir(), 'forge-qemu-kill-'));
    try {
      const child = spawn(process.execPath, [RUNNER, 'cell', 'run', '--provider', 'qemu', '--', 'sleep 600'], {
        env: { ...process.env, FORGE_STATE_DIR: state },
        stdio: 'ignore',
      });
      const cells = join(state, 'qemu', 'cells');
      const until = Date.now() + 30_000;
      while (Date.now() < until && processesWith(cells).filter((p) => cmdlineOf(p).includes('qemu-system')).length === 0)
        await new Promise((r) => setTimeout(r, 100));
      assert.ok(processesWith(cells).length >= 2, 'qemu and virtiofsd are running');
      child.kill('SIGKILL');
      const gone = Date.now() + 10_000;
      while (Date.now() < gone && processesWith(cells).length > 0) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(processesWith(cells), [], 'nothing survives the runner');
      assert.equal(readdirSync(cells).length, 1, 'only files remain');
      const gc = spawn(process.execPath, [RUNNER, 'gc', '--repo', process.cwd(), '--json'], {
        env: { ...process.env, FORGE_STATE_DIR: state },
      });
      let out = '';
      gc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => gc.once('exit', r));
      assert.ok(
        (JSON.parse(out) as { items: Array<{ kind: string; action: string }> }).items.some(
          (i) => i.kind === 'vm' && i.action === 'removed',
        ),
      );
      assert.deepEqual(readdirSync(cells), []);
    } finally {
      // A failed assertion above must not hide behind a mount left under the directory.
      unmountUnder(state);
      rmSync(state, { recursive: true, force: true });
    }
  });
});

describe('qemu cell egress (allow_net through the runner proxy)', function () {
  this.timeout(300_000);
  let provider: QemuCellProvider;
  let stateDir: string;
  before(function () {
    requireQemu(this);
    stateDir = mkdtempSync(join(tmpdir(), 'forge-qemu-net-'));
    provider = new QemuCellProvider({ stateDir });
  });
  after(async () => {
    await provider?.drain();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  const fetchPy = (url: string, timeout = 20) =>
    `/usr/bin/python3 -c 'import urllib.request, sys\ntry:\n  print(urllib.request.urlopen("${url}", timeout=${timeout}).read().decode())\nexcept Exception as e:\n  print("FAILED", e); sys.exit(3)'`;

  it("the install network battery: only the allowlisted host, only through the proxy (not the host loopback, the swarm registry, the host addresses, slirp's host, an earlier cell's token)", async () => {
    await runEgressAttacks(provider, {
      base: { timeout_s: 240 },
      python: '/usr/bin/python3',
      extraDirect: (port) => [
        ['slirp-host', '10.0.2.2', port],
        ['slirp-dns', '10.0.2.3', 53],
      ],
    });
  });

  it('port rules and a deny list that wins; what the proxy refused is in the CellResult (host, port, count, first time)', async () => {
    await runEgressRules(provider, { base: { timeout_s: 240 }, python: '/usr/bin/python3' });
  });

  it('reaches an allowlisted host through the proxy; an unlisted one is refused; nothing else is reachable', async () => {
    const web = createServer((_req, res) => res.end('hello-from-host'));
    const port = await new Promise<number>((r) => web.listen(0, '127.0.0.1', () => r((web.address() as { port: number }).port)));
    try {
      const r = await provider.run({
        allow_net: ['localhost'],
        cmd: `${fetchPy(`http://localhost:${port}/`)}; ${fetchPy('http://unlisted.example/')}; env -u http_proxy -u HTTP_PROXY ${fetchPy(`http://10.0.2.2:${port}/`, 5)}; exit 0`,
        timeout_s: 240,
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.match(r.output, /hello-from-host/);
      assert.match(r.output, /FAILED HTTP Error 403/);
      assert.equal((r.output.match(/FAILED/g) ?? []).length, 2, `direct connections go nowhere: ${r.output}`);
      assert.equal(r.isolation.net, 'allowlist');
      assert.ok(r.isolation.warnings.some((w) => w.includes('unlisted.example')));
    } finally {
      web.close();
    }
  });
});
