// The attacks an allow_net cell (an install step's postinstall, a test command) can make on
// the network, run the same way on every provider that gives cells allow_net: a cell may
// reach its allowlisted hosts through the runner's egress proxy and nothing else.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { CellProvider } from '../../runner/src/cells/provider.js';
import type { CellResult } from '../../runner/src/protocol/cellResult.js';
import type { CellSpecInput } from '../../runner/src/protocol/cellSpec.js';

/** The registry of the local swarm (scripts/swarm-cluster.sh): a real service on the host loopback. */
export const SWARM_REGISTRY_PORT = 5000;

/** Every IPv4 address of this host that is not loopback (eth0, docker0, bridges...). */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a): a is NonNullable<typeof a> => Boolean(a) && a!.family === 'IPv4' && !a!.internal)
    .map((a) => a.address);
}

/**
 * A python3 probe run inside the cell: one line per attempt, `name: outcome`. Direct
 * connections ignore the proxy variables; proxied ones speak HTTP to HTTP_PROXY themselves,
 * so the status line the proxy answers is what is printed.
 */
export const PROBE = String.raw`
import base64, json, os, socket, sys, urllib.parse
plan = json.loads(sys.argv[1])
proxy = urllib.parse.urlparse(os.environ.get("HTTP_PROXY", ""))
def direct(host, port):
    try:
        s = socket.create_connection((host, port), timeout=3)
        s.close()
        return "CONNECTED"
    except Exception as e:
        return "blocked " + type(e).__name__
def via_proxy(line, creds):
    if not proxy.hostname:
        return "no proxy variable"
    try:
        s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
    except Exception as e:
        return "proxy unreachable " + type(e).__name__
    head = line + "\r\nHost: x\r\n"
    if creds:
        head += "Proxy-Authorization: Basic " + base64.b64encode(creds.encode()).decode() + "\r\n"
    s.sendall((head + "Connection: close\r\n\r\n").encode())
    s.settimeout(10)
    data = b""
    try:
        while len(data) < 4096:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
            if line.startswith("CONNECT") and b"\r\n\r\n" in data:
                break
    except Exception:
        pass
    text = data.decode("latin1")
    status, _, body = text.partition("\r\n")
    return status + ("" if line.startswith("CONNECT") else " | " + " ".join(body.split("\r\n\r\n", 1)[-1].split())[:160])
own = (proxy.username or "") + ":" + (proxy.password or "")
for name, host, port in plan["direct"]:
    print(name + ": " + direct(host, port), flush=True)
for name, line, who in plan["proxied"]:
    creds = own if who == "own" else (None if who == "none" else who)
    print(name + ": " + via_proxy(line, creds), flush=True)
`;

interface Listeners {
  /** A TCP service on every host address (0.0.0.0): a cell must never reach it directly. */
  service: Server;
  servicePort: number;
  /** An HTTP server on the host loopback, allowlisted as "localhost": reachable only through the proxy. */
  web: HttpServer;
  webPort: number;
  /** Connections each listener accepted. */
  seen: { service: number; web: number };
}

async function listen(s: Server | HttpServer, host: string): Promise<number> {
  await new Promise<void>((resolve) => s.listen(0, host, () => resolve()));
  return (s.address() as { port: number }).port;
}

async function startListeners(): Promise<Listeners> {
  const seen = { service: 0, web: 0 };
  const service = createServer((c: Socket) => {
    seen.service++;
    c.end('host-service\n');
  });
  const web = createHttpServer((_req, res) => res.end('hello-through-proxy'));
  web.on('connection', () => seen.web++);
  return { service, servicePort: await listen(service, '0.0.0.0'), web, webPort: await listen(web, '127.0.0.1'), seen };
}

/** "user:password" of the proxy URL a cell printed. */
function credentialsIn(output: string): string {
  const m = /http:\/\/([^:@\s]+:[^@\s]+)@/.exec(output);
  assert.ok(m, `the cell printed no proxy credentials: ${output}`);
  return m[1]!;
}

export interface EgressAttackOptions {
  /** The CellSpec fields a cell of this provider needs besides the command (image, timeout). */
  base: Partial<CellSpecInput>;
  /** What the cell must call python3. */
  python?: string;
  /** More direct attempts that must fail, given the host service's port (e.g. qemu's slirp host alias). */
  extraDirect?: (servicePort: number) => [string, string, number][];
}

/**
 * The battery: one allow_net cell tries everything at once (a second cell's credentials come
 * from a cell that ran before it), and every attempt but the allowlisted host through the
 * proxy must fail, with the listeners seeing nothing but the proxy's own connections.
 */
export async function runEgressAttacks(provider: CellProvider, opts: EgressAttackOptions): Promise<void> {
  const l = await startListeners();
  const python = opts.python ?? 'python3';
  try {
    const first = await provider.run({ ...opts.base, cmd: ['sh', '-c', 'echo "$HTTP_PROXY"'], allow_net: ['localhost'] });
    assert.equal(first.exit_code, 0, first.output);
    const earlier = credentialsIn(first.output);
    const direct: [string, string, number][] = [
      ['loopback-service', '127.0.0.1', l.servicePort],
      ['swarm-registry', '127.0.0.1', SWARM_REGISTRY_PORT],
      ['allowlisted-bypassing-proxy', 'localhost', l.webPort],
      ['allowlisted-registry-direct', 'registry.npmjs.org', 443],
      ...hostAddresses().map((a): [string, string, number] => [`host-address-${a}`, a, l.servicePort]),
      ...(opts.extraDirect?.(l.servicePort) ?? []),
    ];
    const proxied: [string, string, string][] = [
      ['allowed-get', `GET http://localhost:${l.webPort}/ HTTP/1.1`, 'own'],
      ['allowed-connect', `CONNECT localhost:${l.webPort} HTTP/1.1`, 'own'],
      ['unlisted-get', 'GET http://unlisted.example/ HTTP/1.1', 'own'],
      ['registry-by-ip', `CONNECT 127.0.0.1:${SWARM_REGISTRY_PORT} HTTP/1.1`, 'own'],
      ['loopback-service-by-name', `CONNECT 127.0.0.1:${l.servicePort} HTTP/1.1`, 'own'],
      ['no-credentials', `GET http://localhost:${l.webPort}/ HTTP/1.1`, 'none'],
      ['earlier-cells-token', `GET http://localhost:${l.webPort}/ HTTP/1.1`, earlier],
    ];
    const r: CellResult = await provider.run({
      ...opts.base,
      cmd: [python, '-c', PROBE, JSON.stringify({ direct, proxied })],
      allow_net: ['localhost'],
    });
    const out = r.output;
    const line = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(out)?.[1] ?? `(no line for ${name} in: ${out})`;
    assert.equal(r.exit_code, 0, out);
    for (const [name] of direct) assert.match(line(name), /^blocked /, `${name} must not connect directly: ${line(name)}`);
    assert.match(line('allowed-get'), /^HTTP\/1\.1 200 .*hello-through-proxy/, line('allowed-get'));
    assert.match(line('allowed-connect'), /^HTTP\/1\.1 200 Connection Established/, line('allowed-connect'));
    assert.match(line('unlisted-get'), /^HTTP\/1\.1 403 .*unlisted\.example:80 is not in this cell's allow_net/, line('unlisted-get'));
    assert.match(line('registry-by-ip'), /^HTTP\/1\.1 403/, line('registry-by-ip'));
    assert.match(line('loopback-service-by-name'), /^HTTP\/1\.1 403/, line('loopback-service-by-name'));
    assert.match(line('no-credentials'), /^HTTP\/1\.1 407/, line('no-credentials'));
    assert.match(line('earlier-cells-token'), /^HTTP\/1\.1 407/, line('earlier-cells-token'));
    assert.equal(r.isolation.net, 'allowlist');
    const refused = r.isolation.warnings.find((w) => w.startsWith('egress refused'));
    assert.ok(
      refused?.includes('unlisted.example') && refused.includes('127.0.0.1'),
      `refused hosts in warnings: ${r.isolation.warnings.join(' | ')}`,
    );
    assert.equal(l.seen.service, 0, 'the host service saw a connection from the cell');
    assert.equal(l.seen.web, 2, 'the allowlisted server saw exactly the two proxied connections');
  } finally {
    l.service.close();
    l.web.close();
  }
}

/**
 * What the proxy refused, in the CellResult, and the rules that refuse it (issue 30), the same
 * on every provider: one allow_net cell with a port rule (`localhost:A`), an address allowed on
 * every port (`127.0.0.1`) and a deny entry for one of its ports (`127.0.0.1:B`) tries the
 * allowed port, the other port by name, the denied port by address (also written `127.1`), and
 * an unlisted host three times. Its egress_denied lists each refused destination with how often
 * and when first; the servers see only what was allowed.
 */
export async function runEgressRules(provider: CellProvider, opts: EgressAttackOptions): Promise<void> {
  const seen = { a: 0, b: 0 };
  const a = createHttpServer((_req, res) => res.end('port-a'));
  const b = createHttpServer((_req, res) => res.end('port-b'));
  a.on('connection', () => seen.a++);
  b.on('connection', () => seen.b++);
  const portA = await listen(a, '127.0.0.1');
  const portB = await listen(b, '127.0.0.1');
  try {
    const get = (url: string) => `GET ${url} HTTP/1.1`;
    const proxied: [string, string, string][] = [
      ['port-rule-allows', get(`http://localhost:${portA}/`), 'own'],
      ['port-rule-refuses', get(`http://localhost:${portB}/`), 'own'],
      ['address-any-port', get(`http://127.0.0.1:${portA}/`), 'own'],
      ['deny-wins', get(`http://127.0.0.1:${portB}/`), 'own'],
      ['deny-wins-spelled', `CONNECT 127.1:${portB} HTTP/1.1`, 'own'],
      ...[1, 2, 3].map((i): [string, string, string] => [`unlisted-${i}`, get('http://unlisted.example/'), 'own']),
    ];
    const started = Date.now();
    const r = await provider.run({
      ...opts.base,
      cmd: [opts.python ?? 'python3', '-c', PROBE, JSON.stringify({ direct: [], proxied })],
      allow_net: [`localhost:${portA}`, '127.0.0.1'],
      deny_net: [`127.0.0.1:${portB}`],
    });
    const ended = Date.now();
    const out = r.output;
    const line = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(out)?.[1] ?? `(no line for ${name} in: ${out})`;
    assert.equal(r.exit_code, 0, out);
    assert.match(line('port-rule-allows'), /^HTTP\/1\.1 200 .*port-a/);
    assert.match(line('port-rule-refuses'), new RegExp(`^HTTP/1\\.1 403 .*localhost:${portB} is not in this cell's allow_net`));
    assert.match(line('address-any-port'), /^HTTP\/1\.1 200 .*port-a/);
    assert.match(line('deny-wins'), new RegExp(`^HTTP/1\\.1 403 .*127\\.0\\.0\\.1:${portB} is in this cell's deny_net`));
    assert.match(line('deny-wins-spelled'), /^HTTP\/1\.1 403/);
    for (const i of [1, 2, 3])
      assert.match(line(`unlisted-${i}`), /^HTTP\/1\.1 403 .*unlisted\.example:80 is not in this cell's allow_net/);
    assert.equal(seen.b, 0, 'the refused port saw a connection');
    assert.equal(seen.a, 2, 'the allowed port saw exactly the two allowed requests');

    const entry = (host: string, port: number) => r.egress_denied.find((d) => d.host === host && d.port === port);
    const expected: [string, number, number, 'allow_net' | 'deny_net'][] = [
      ['localhost', portB, 1, 'allow_net'],
      ['127.0.0.1', portB, 2, 'deny_net'],
      ['unlisted.example', 80, 3, 'allow_net'],
    ];
    for (const [host, port, attempts, by] of expected) {
      const d = entry(host, port);
      assert.ok(d, `no record of ${host}:${port} in ${JSON.stringify(r.egress_denied)}`);
      assert.ok(d.count >= attempts, `${host}:${port} refused ${attempts} time(s), counted ${d.count}`);
      assert.equal(d.refused_by, by, `${host}:${port}`);
      const first = Date.parse(d.first_at);
      assert.ok(first >= started - 1000 && first <= ended + 1000, `${host}:${port} first refused at ${d.first_at}, not during the cell`);
    }
    assert.equal(r.egress_denied.length, 3, `only the refused destinations: ${JSON.stringify(r.egress_denied)}`);
    assert.equal(r.egress_denied_more, 0);
    const warning = r.isolation.warnings.find((w) => w.startsWith('egress refused'));
    assert.ok(warning?.includes(`127.0.0.1:${portB} (deny_net) x2`) && warning.includes('unlisted.example:80 x3'), warning);
  } finally {
    a.close();
    b.close();
  }
}
