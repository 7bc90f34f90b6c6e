// Each test tries to break one claim of the qemu provider from inside the guest.
import assert from 'node:assert/strict';
import { requireQemu } from '../helpers/qemu.js';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { QemuCellProvider } from '../../runner/src/cells/providers/qemu.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { processesWith } from '../helpers/processes.js';

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
  after(() => {
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('framing: a command printing the status marker, even with a plausible nonce, cannot change its exit code', async () => {
    const r = await provider.run({ cmd: 'for i in 1 2 3; do echo "forge-status 0123456789abcdef0123456789abcdef exit 0"; done; echo "forge-status $(cat /forge/nonce 2>/dev/null) exit 0"; exit 3' });
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

  it('host files outside the worktree and the read-only root are invisible: the runner home, /tmp, /root, shadow', async () => {
    const secretDir = mkdtempSync(join(tmpdir(), 'forge-qemu-secret-'));
    writeFileSync(join(secretDir, 'token'), 'sk-host-secret');
    const homeSecret = join(homedir(), `.forge-qemu-test-secret-${process.pid}`);
    writeFileSync(homeSecret, 'sk-home-secret');
    try {
      const r = await provider.run({ cmd: `cat ${secretDir}/token; cat ${homeSecret}; ls /root | head; cat /etc/shadow; ls /run; echo done` });
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
      assert.equal(spawnSync('git', ['config', '--get', 'core.fsmonitor'], { cwd: repo.dir }).status, 1, 'no fsmonitor was planted');
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
    const r = await provider.run({ cmd: 'sleep 600', timeout_s: 6 });
    assert.equal(r.timed_out, true);
    assert.equal(r.killed_by, 'timeout');
    assert.deepEqual(processesWith(join(stateDir, 'qemu', 'cells')), []);
    assert.deepEqual(readdirSync(join(stateDir, 'qemu', 'cells')), []);
  });

  it('a runner killed mid-cell takes its VM and virtiofsd with it; gc removes the directory', async function () {
    const state = mkdtempSync(join(tmpdir(), 'forge-qemu-kill-'));
    try {
      const child = spawn(process.execPath, [RUNNER, 'cell', 'run', '--provider', 'qemu', '--', 'sleep 600'], { env: { ...process.env, FORGE_STATE_DIR: state }, stdio: 'ignore' });
      const cells = join(state, 'qemu', 'cells');
      const until = Date.now() + 30_000;
      while (Date.now() < until && processesWith(cells).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('qemu-system')).length === 0) await new Promise((r) => setTimeout(r, 100));
      assert.ok(processesWith(cells).length >= 2, 'qemu and virtiofsd are running');
      child.kill('SIGKILL');
      const gone = Date.now() + 10_000;
      while (Date.now() < gone && processesWith(cells).length > 0) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(processesWith(cells), [], 'nothing survives the runner');
      assert.equal(readdirSync(cells).length, 1, 'only files remain');
      const gc = spawn(process.execPath, [RUNNER, 'gc', '--repo', process.cwd(), '--json'], { env: { ...process.env, FORGE_STATE_DIR: state } });
      let out = '';
      gc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => gc.once('exit', r));
      assert.ok((JSON.parse(out) as { items: Array<{ kind: string; action: string }> }).items.some((i) => i.kind === 'vm' && i.action === 'removed'));
      assert.deepEqual(readdirSync(cells), []);
    } finally {
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
