// An install cell's network is only the registries, through the egress proxy: a hostile
// repository's install step (npm postinstall) once used a host cell's allow_net to reach the
// host network unfiltered (it pushed an image to the local registry on 127.0.0.1:5000).
// Docker and qemu cells face the same battery in dockerEgress and qemuCell.security.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { HostCellProvider } from '../../runner/src/cells/providers/hostCellProvider.js';
import { InputError } from '../../runner/src/protocol/inputError.js';
import { hostAddresses, PROBE, runEgressAttacks, runEgressRules, SWARM_REGISTRY_PORT } from '../helpers/egressAttacks.js';
import { git, makeRepo } from '../helpers/gitRepo.js';
import { requireFeature } from '../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const ROOT = process.getuid?.() === 0;

function cli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [RUNNER, ...args], {
    encoding: 'utf8',
    timeout: 280_000,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, ...env },
  });
}

/** A small npm project: its stack's registries are what an install cell may reach. */
const npmRepo = () =>
  makeRepo({
    'package.json': JSON.stringify({ name: 'victim', version: '1.0.0', scripts: { test: 'node test.js' } }),
    'test.js': 'process.exit(1)\n',
  });

function replayFile(dir: string): string {
  const file = join(dir, 'replay.json');
  writeFileSync(file, JSON.stringify({ version: 1, attempts: [[{ tool_calls: [{ name: 'finish', arguments: { summary: 's' } }] }]] }));
  return `replay:${file}`;
}

const runsInStore = (): number => {
  const path = join(process.env.FORGE_STATE_DIR!, 'forge.db');
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) n FROM runs').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

async function listenCounting(host: string): Promise<{ server: Server; port: number; seen: () => number }> {
  let n = 0;
  const server = createServer((c: Socket) => {
    n++;
    c.end('host-service\n');
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return { server, port: (server.address() as { port: number }).port, seen: () => n };
}

describe('install network: host cells with allow_net get the proxy, never the host network', function () {
  this.timeout(300_000);
  let provider: HostCellProvider;

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    provider = new HostCellProvider({ bubblewrap: 'require' });
  });
  after(async () => provider?.drain());

  it('a cell with allow_net reaches its allowlisted host through the proxy and nothing else: not the host loopback, the swarm registry, the host addresses, nor the allowed host directly', async () => {
    await runEgressAttacks(provider, { base: {} });
  });

  it('port rules and a deny list that wins; what the proxy refused is in the CellResult (host, port, count, first time)', async () => {
    await runEgressRules(provider, { base: {} });
  });

  it('real clients work through the relay: curl forwarding and tunnelling, also the way git asks (anyauth: credentials only after a 407)', async () => {
    const web = createHttpServer((_req, res) => res.end('hello-through-proxy'));
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', () => resolve()));
    const url = `http://localhost:${(web.address() as { port: number }).port}/`;
    try {
      const r = await provider.run({
        cmd: `for how in '' --proxy-anyauth '-p' '-p --proxy-anyauth'; do echo "curl $how: $(curl -sS --max-time 10 $how ${url})"; done`,
        allow_net: ['localhost'],
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.equal((r.output.match(/: hello-through-proxy$/gm) ?? []).length, 4, r.output);
    } finally {
      web.close();
    }
  });

  it("npm installs from the real registry through the relay and the proxy (the install cell's one job)", async function () {
    const reachable = spawnSync('curl', ['-sS', '-o', '/dev/null', '--max-time', '10', 'https://registry.npmjs.org/is-number'], {
      encoding: 'utf8',
    });
    requireFeature(this, reachable.status === 0, `registry.npmjs.org is not reachable from this machine (${reachable.stderr.trim()})`);
    const repo = makeRepo({ 'package.json': JSON.stringify({ name: 'x', version: '1.0.0', dependencies: { 'is-number': '7.0.0' } }) });
    try {
      const r = await provider.run({
        worktree: repo.dir,
        cmd: 'npm install --no-audit --no-fund --no-update-notifier && node -e "console.log(require(\'is-number\')(5))"',
        allow_net: ['registry.npmjs.org'],
        timeout_s: 120,
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.match(r.output, /^true$/m);
      assert.equal(r.isolation.net, 'allowlist');
    } finally {
      repo.cleanup();
    }
  });

  it("another live cell's token is refused on this cell's socket (407): a grant answers only on its own cell's socket", async () => {
    const web = createHttpServer((_req, res) => res.end('hello-through-proxy'));
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', () => resolve()));
    const port = (web.address() as { port: number }).port;
    const get = (name: string, who: string) =>
      JSON.stringify({ direct: [], proxied: [[name, `GET http://localhost:${port}/ HTTP/1.1`, who]] });
    try {
      let sawCredentials: (c: string) => void = () => undefined;
      const credentials = new Promise<string>((resolve) => (sawCredentials = resolve));
      let printed = '';
      // Cell A shows its credentials, holds its grant while cell B tries them, then uses them itself.
      const a = provider.run(
        {
          cmd: ['sh', '-c', 'echo "$HTTP_PROXY"; sleep 6; exec python3 -c "$0" "$1"', PROBE, get('own-later', 'own')],
          allow_net: ['localhost'],
          timeout_s: 60,
        },
        {
          onOutput: (chunk) => {
            printed += chunk.toString();
            const m = /http:\/\/([^:@\s]+:[^@\s]+)@/.exec(printed);
            if (m) sawCredentials(m[1]!);
          },
        },
      );
      const creds = await Promise.race([
        credentials,
        a.then((r) => {
          throw new Error(`cell A ended without proxy credentials in its environment: ${r.output}`);
        }),
      ]);
      const b = await provider.run({ cmd: ['python3', '-c', PROBE, get('other-cell', creds)], allow_net: ['localhost'] });
      assert.match(b.output, /^other-cell: HTTP\/1\.1 407/m, b.output);
      const ended = await a;
      // A's grant was live all along: the token B presented was not refused for being stale.
      assert.match(ended.output, /^own-later: HTTP\/1\.1 200 .*hello-through-proxy/m, ended.output);
    } finally {
      web.close();
    }
  });

  it("a cell's socket is closed to every other local user, the cell user outside the sandbox included", async function () {
    requireFeature(this, ROOT, 'needs root to try the socket as other users');
    const before = new Set(readdirSync(tmpdir()).filter((e) => e.startsWith('forge-egress-')));
    const a = provider.run({ cmd: ['sleep', '5'], allow_net: ['localhost'], timeout_s: 60 });
    let dir: string | undefined;
    for (let i = 0; i < 100 && !dir; i++) {
      dir = readdirSync(tmpdir()).find((e) => e.startsWith('forge-egress-') && !before.has(e));
      if (!dir) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(dir, 'the cell has a socket directory');
    const socket = join(tmpdir(), dir, 'proxy.sock');
    assert.equal(statSync(join(tmpdir(), dir)).mode & 0o777, 0o700);
    assert.equal(statSync(socket).mode & 0o777, 0o600);
    const connectAs = (uid: number) =>
      spawnSync(
        'setpriv',
        [
          `--reuid=${uid}`,
          `--regid=${uid}`,
          '--clear-groups',
          '/usr/bin/python3',
          '-c',
          `import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(${JSON.stringify(socket)}); print("CONNECTED")\nexcept Exception as e:\n  print("refused", type(e).__name__)`,
        ],
        { encoding: 'utf8' },
      ).stdout;
    try {
      for (const uid of [1000, 65532]) assert.match(connectAs(uid), /^refused PermissionError/, `uid ${uid}`);
    } finally {
      await a;
    }
    assert.equal(existsSync(join(tmpdir(), dir)), false, 'the socket directory goes with the cell');
  });

  it('without bubblewrap, allow_net is refused with one line and nothing runs', async () => {
    const plain = new HostCellProvider({ bubblewrap: 'off', prewarm: 0 });
    const scratch = mkdtempSync(join(tmpdir(), 'forge-plain-net-'));
    // Writable by the cell user: a command that ran would leave its marker.
    chmodSync(scratch, 0o1777);
    try {
      const marker = join(scratch, 'ran');
      await assert.rejects(
        plain.run({ cmd: ['touch', marker], allow_net: ['registry.npmjs.org'] }),
        (e: Error) =>
          e instanceof InputError &&
          /^allow_net: host cells without bubblewrap .*install bubblewrap, or use --provider docker or qemu$/.test(e.message) &&
          !e.message.includes('\n'),
      );
      assert.equal(existsSync(marker), false, 'the command ran');
      assert.equal((await plain.run({ cmd: ['true'] })).exit_code, 0, 'cells without network still run');
    } finally {
      await plain.drain();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

describe('install network: fix --install-cmd end to end', function () {
  this.timeout(300_000);
  before(function () {
    requireFeature(this, existsSync(RUNNER), 'dist/runner.js is missing: run npm run build');
  });

  it("fix --provider host --install-cmd: a postinstall that dials the host's services reaches none of them", async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    const loopback = await listenCounting('127.0.0.1');
    const everywhere = await listenCounting('0.0.0.0');
    const repo = npmRepo();
    const scratch = mkdtempSync(join(tmpdir(), 'forge-install-net-'));
    try {
      const targets = [
        ['loopback', '127.0.0.1', loopback.port],
        ['registry', '127.0.0.1', SWARM_REGISTRY_PORT],
        ...hostAddresses().map((a) => [`host-${a}`, a, everywhere.port]),
      ];
      // What a hostile postinstall does; it exits 7 so the run prints its last lines.
      const dial = `python3 -c ${shellQuote(
        `import socket, json\nfor n, h, p in json.loads(${JSON.stringify(JSON.stringify(targets))}):\n  try:\n    socket.create_connection((h, p), timeout=3).close(); print(n, "REACHED")\n  except Exception as e:\n    print(n, "blocked")`,
      )} | tr '\\n' ' '; echo; exit 7`;
      const r = cli([
        'fix',
        '--repo',
        repo.dir,
        '--provider',
        'host',
        '--issue-text',
        'x',
        '--model',
        replayFile(scratch),
        '--install-cmd',
        dial,
      ]);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /\(once for the run; network: registry\.npmjs\.org, registry\.yarnpkg\.com\)/);
      const failed = /^forge-runner: install command failed \(exit 7\): (.*)$/m.exec(r.stderr)?.[1] ?? '';
      assert.match(failed, /^loopback blocked registry blocked /, r.stderr);
      assert.doesNotMatch(failed, /REACHED/, r.stderr);
      assert.equal(loopback.seen(), 0, 'the loopback listener saw a connection from the install cell');
      assert.equal(everywhere.seen(), 0, "a listener on the host's addresses saw a connection from the install cell");
      assert.equal(git(repo.dir, 'worktree', 'list').trim().split('\n').length, 1, 'the install worktree was left behind');
    } finally {
      loopback.server.close();
      everywhere.server.close();
      repo.cleanup();
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  for (const [provider, extra, env, why] of [
    // Swarm cells reach the proxy through a relay on the manager's engine: a remote manager cannot carry them.
    [
      'swarm',
      ['--image', 'forge-test/busybox:1', '--docker-host', 'tcp://127.0.0.1:9'],
      {},
      /relay on the manager's engine, and the manager \(tcp:\/\/127\.0\.0\.1:9\) is not this machine's engine/,
    ],
    ['host', [], { FORGE_BUBBLEWRAP: 'off' }, /host cells without bubblewrap are plain subprocesses on the host network/],
  ] as const) {
    it(`fix --provider ${provider}${env.FORGE_BUBBLEWRAP ? ' without bubblewrap' : ''} --install-cmd / --allow-net: refused with one line before anything runs or is recorded`, () => {
      const repo = npmRepo();
      const scratch = mkdtempSync(join(tmpdir(), 'forge-install-net-'));
      try {
        chmodSync(scratch, 0o1777);
        const marker = join(scratch, 'installed');
        const before = runsInStore();
        const base = ['fix', '--repo', repo.dir, '--provider', provider, ...extra, '--issue-text', 'x', '--model', replayFile(scratch)];
        const install = cli([...base, '--install-cmd', `touch ${marker}`], env);
        assert.equal(install.status, 2, install.stderr);
        const line = install.stderr.trim();
        assert.equal(line.split('\n').length, 1, line);
        assert.match(line, /--install-cmd needs the package registries \(registry\.npmjs\.org, registry\.yarnpkg\.com\), but /);
        assert.match(line, why);
        assert.match(line, /install the dependencies in your checkout .*use --provider docker or qemu/);
        const net = cli([...base, '--allow-net', 'example.org'], env);
        assert.equal(net.status, 2, net.stderr);
        assert.match(net.stderr.trim(), /^forge-runner: --allow-net example\.org: .*; drop --allow-net or /);
        assert.equal(existsSync(marker), false, 'the install command ran');
        assert.equal(runsInStore(), before, 'a run was recorded');
        assert.equal(git(repo.dir, 'worktree', 'list').trim().split('\n').length, 1, 'a worktree was made');
      } finally {
        repo.cleanup();
        rmSync(scratch, { recursive: true, force: true });
      }
    });
  }
});

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
