import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import Docker from 'dockerode';
import { EGRESS_NETWORK } from '../../runner/src/cells/egressNetwork.js';
import { DockerCellProvider } from '../../runner/src/cells/providers/dockerCellProvider.js';
import { dockerUnavailable, TEST_IMAGES } from '../helpers/docker.js';
import { runEgressAttacks, runEgressRules } from '../helpers/egressAttacks.js';
import { requireFeature } from '../helpers/requirement.js';

const listen = (s: Server | TcpServer, host: string) =>
  new Promise<number>((resolve) => s.listen(0, host, () => resolve((s.address() as { port: number }).port)));

describe('docker cell egress (allow_net through the runner proxy)', function () {
  this.timeout(120_000);
  let provider: DockerCellProvider;
  const image = TEST_IMAGES.bookworm;

  before(async function () {
    const why = await dockerUnavailable(image);
    requireFeature(this, why === null, why ?? '');
    provider = new DockerCellProvider();
  });
  after(async () => provider?.drain());

  const py = (code: string) => ['python3', '-c', code];
  const fetch = (url: string) =>
    py(
      `import urllib.request, sys\ntry:\n  print(urllib.request.urlopen(${JSON.stringify(url)}, timeout=10).read().decode())\nexcept Exception as e:\n  print("FAILED", e, getattr(e, "read", lambda: b"")().decode()); sys.exit(3)`,
    );

  it('reaches an allowlisted host, and an unlisted one is refused visibly', async () => {
    const web: Server = createServer((_req, res) => res.end('hello-through-proxy'));
    const port = await listen(web, '127.0.0.1');
    try {
      const ok = await provider.run({ image, cmd: fetch(`http://localhost:${port}/`), allow_net: ['localhost'] });
      assert.equal(ok.exit_code, 0, ok.output);
      assert.match(ok.output, /hello-through-proxy/);
      assert.equal(ok.isolation.net, 'allowlist');
      const refused = await provider.run({ image, cmd: fetch('http://unlisted.example/'), allow_net: ['localhost'] });
      assert.equal(refused.exit_code, 3);
      assert.match(refused.output, /403/);
      assert.match(refused.output, /unlisted\.example:80 is not in this cell's allow_net/);
      assert.ok(refused.isolation.warnings.some((w) => w.includes('unlisted.example')));
    } finally {
      web.close();
    }
  });

  it("the install network battery: only the allowlisted host, only through the proxy (not the host loopback, the swarm registry, the host addresses, an earlier cell's token)", async () => {
    await runEgressAttacks(provider, { base: { image } });
  });

  it('port rules and a deny list that wins; what the proxy refused is in the CellResult (host, port, count, first time)', async () => {
    await runEgressRules(provider, { base: { image } });
  });

  it('CONNECT tunnels (https) obey the same allowlist', async () => {
    const raw = (target: string) =>
      py(
        [
          'import socket, os, base64, urllib.parse',
          'p = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])',
          's = socket.create_connection((p.hostname, p.port), timeout=10)',
          'auth = base64.b64encode(f"{p.username}:{p.password}".encode()).decode()',
          `s.sendall(f"CONNECT ${target} HTTP/1.1\\r\\nHost: ${target}\\r\\nProxy-Authorization: Basic {auth}\\r\\n\\r\\n".encode())`,
          'print(s.recv(200).decode().splitlines()[0])',
        ].join('\n'),
      );
    const tcp: TcpServer = createTcpServer((c) => c.end());
    const port = await listen(tcp, '127.0.0.1');
    try {
      const allowed = await provider.run({ image, cmd: raw(`localhost:${port}`), allow_net: ['localhost'] });
      assert.match(allowed.output, /HTTP\/1.1 200/, allowed.output);
      const denied = await provider.run({ image, cmd: raw('evil.example:443'), allow_net: ['localhost'] });
      assert.match(denied.output, /HTTP\/1.1 403/, denied.output);
    } finally {
      tcp.close();
    }
  });

  it('no way around the proxy: no direct route, no credentials-less use, no host services on the gateway', async () => {
    const hostService: TcpServer = createTcpServer((c) => c.end('host-service\n'));
    const servicePort = await listen(hostService, '0.0.0.0');
    try {
      const r = await provider.run({
        image,
        allow_net: ['localhost'],
        cmd: py(
          [
            'import socket, os, urllib.parse',
            'gw = urllib.parse.urlparse(os.environ["HTTP_PROXY"]).hostname',
            'def attempt(host, port):',
            '  try:',
            '    s = socket.create_connection((host, port), timeout=3); print("CONNECTED", host, port, s.recv(50))',
            '  except Exception as e:',
            '    print("blocked", host, port, type(e).__name__)',
            'attempt("1.1.1.1", 80)',
            `attempt(gw, ${servicePort})`,
          ].join('\n'),
        ),
      });
      assert.doesNotMatch(r.output, /CONNECTED/, r.output);
      assert.equal((r.output.match(/blocked/g) ?? []).length, 2, r.output);
      // Without the cell's credentials the proxy refuses.
      const anon = await provider.run({
        image,
        allow_net: ['localhost'],
        cmd: py(
          [
            'import urllib.request, urllib.parse, os',
            'p = urllib.parse.urlparse(os.environ["HTTP_PROXY"])',
            'opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://{p.hostname}:{p.port}"}))',
            'try:',
            '  opener.open("http://localhost:1/", timeout=5)',
            'except Exception as e:',
            '  print("refused", e)',
          ].join('\n'),
        ),
      });
      assert.match(anon.output, /407/);
    } finally {
      hostService.close();
    }
  });

  it('cells on the egress network cannot reach each other: another container there is not a way around the proxy', async () => {
    // A cell with allow_net makes (or remakes) the network; then a peer listens on it.
    await provider.run({ image, cmd: ['true'], allow_net: ['localhost'] });
    const docker = new Docker({ socketPath: '/var/run/docker.sock' });
    const peer = await docker.createContainer({
      Image: TEST_IMAGES.busybox,
      Cmd: ['sh', '-c', 'echo peer-secret > /tmp/index.html && exec httpd -f -p 8080 -h /tmp'],
      Labels: { 'forge.test': 'egress-peer' },
      HostConfig: { NetworkMode: EGRESS_NETWORK, AutoRemove: false },
    });
    try {
      await peer.start();
      const ip = ((await peer.inspect()).NetworkSettings.Networks[EGRESS_NETWORK] as { IPAddress: string }).IPAddress;
      assert.ok(ip, 'the peer has an address on the egress network');
      // The peer really serves (seen from inside itself).
      const self = await peer.exec({ Cmd: ['wget', '-qO-', 'http://127.0.0.1:8080/'], AttachStdout: true, AttachStderr: true });
      const selfOut = await new Promise<string>((resolve) => {
        void self.start({}).then((stream) => {
          let out = '';
          stream.on('data', (d: Buffer) => (out += d.toString('latin1')));
          stream.on('end', () => resolve(out));
        });
      });
      assert.match(selfOut, /peer-secret/);
      const r = await provider.run({
        image,
        allow_net: ['localhost'],
        cmd: py(
          [
            'import socket',
            'try:',
            `  s = socket.create_connection((${JSON.stringify(ip)}, 8080), timeout=3); s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n"); print("CONNECTED", s.recv(200))`,
            'except Exception as e:',
            '  print("blocked", type(e).__name__)',
          ].join('\n'),
        ),
      });
      assert.doesNotMatch(r.output, /CONNECTED|peer-secret/, r.output);
      assert.match(r.output, /blocked/, r.output);
    } finally {
      await peer.remove({ force: true }).catch(() => undefined);
    }
  });
});
