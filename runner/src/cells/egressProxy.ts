import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, createServer as createUnixServer, type Socket } from 'node:net';
import { cachingLookup } from './egressLookup.js';
import { EgressDeniedLog, type EgressDenied, NO_EGRESS_DENIED } from './egressDeniedLog.js';
import { egressDecision, type EgressRules, egressRules, parseConnectTarget, parseProxyAuthorization } from './egressPolicy.js';
import { matchingHost, netDestination } from '../protocol/netRule.js';

interface Grant {
  token: string;
  rules: EgressRules;
  /** The entries as given, for the refusal's text. */
  allowNet: readonly string[];
  /** Refused destinations, for the cell's result. */
  denied: EgressDeniedLog;
  /** The one address the cell's connections come from (a swarm cell's own relay); null: any. */
  source: string | null;
}

/** Who may go where: a cell's allow_net and deny_net (deny checked first). */
export interface EgressNet {
  allow_net: readonly string[];
  deny_net: readonly string[];
}

/**
 * The runner's egress proxy for cells with allow_net: HTTP forwarding and CONNECT tunnels,
 * each checked against the allowlist of the cell that authenticated. Docker and qemu cells
 * reach it over TCP from a network whose only way out it is; host cells each through a Unix
 * socket of their own (serveCell), which answers for that one cell only.
 */
export class EgressProxy {
  private server: Server | null = null;
  private listening = false;
  private readonly grants = new Map<string, Grant>();
  private readonly sockets = new Set<Socket>();
  /** Connections that came in on a cell's own socket: only that cell's credentials count on them. */
  private readonly socketCell = new WeakMap<Socket, string>();
  private readonly lookup = cachingLookup();

  constructor(private readonly listenHost: string) {}

  private http(): Server {
    if (this.server) return this.server;
    const server = createServer((req, res) => this.forward(req, res));
    server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => this.tunnel(req, client, head));
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return (this.server = server);
  }

  /** Listens on TCP (listenHost, a free port) and returns the port. */
  async start(): Promise<number> {
    const server = this.http();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, this.listenHost, () => resolve());
    });
    this.listening = true;
    return (server.address() as { port: number }).port;
  }

  /**
   * A Unix socket at `path` that speaks for one cell: a connection on it is served only with
   * that cell's credentials (another cell's token gets a 407 there, as no token does). The
   * caller makes `path`'s directory private and decides who may connect.
   */
  async serveCell(cellId: string, path: string): Promise<{ close: () => Promise<void> }> {
    const server = this.http();
    const accepted = new Set<Socket>();
    const unix = createUnixServer((s) => {
      this.socketCell.set(s, cellId);
      accepted.add(s);
      s.on('close', () => accepted.delete(s));
      server.emit('connection', s);
    });
    await new Promise<void>((resolve, reject) => {
      unix.once('error', reject);
      unix.listen(path, () => resolve());
    });
    return {
      close: () =>
        new Promise<void>((resolve) => {
          for (const s of accepted) s.destroy();
          unix.close(() => resolve());
        }),
    };
  }

  /** A cell's credentials; the proxy URL the cell gets embeds them. Throws on a bad rule (never a grant that ignores one). */
  grant(cellId: string, net: EgressNet, source: string | null = null): { token: string } {
    const rules = egressRules(net.allow_net, net.deny_net);
    const token = randomBytes(18).toString('base64url');
    this.grants.set(cellId, { token, rules, allowNet: [...net.allow_net], denied: new EgressDeniedLog(), source });
    return { token };
  }

  /** Ends a cell's access and reports what it was refused (the first call after the grant; later ones: nothing). */
  revoke(cellId: string): EgressDenied {
    const g = this.grants.get(cellId);
    this.grants.delete(cellId);
    return g ? g.denied.summary() : NO_EGRESS_DENIED;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    if (server && this.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.server = null;
    this.listening = false;
  }

  private authorize(header: string | undefined, socket: Socket): Grant | null {
    const auth = parseProxyAuthorization(header);
    const grant = auth ? this.grants.get(auth.cellId) : undefined;
    if (!auth || !grant) return null;
    const bound = this.socketCell.get(socket);
    if (bound !== undefined && bound !== auth.cellId) return null;
    // A token bound to its cell's relay is worthless from anywhere else (another cell's relay).
    if (grant.source !== null && (socket.remoteAddress ?? '').replace(/^::ffff:/, '') !== grant.source) return null;
    const a = Buffer.from(auth.token);
    const b = Buffer.from(grant.token);
    return a.length === b.length && timingSafeEqual(a, b) ? grant : null;
  }

  private tunnel(req: IncomingMessage, client: Socket, head: Buffer): void {
    client.on('error', () => client.destroy());
    const grant = this.authorize(req.headers['proxy-authorization'], client);
    const target = parseConnectTarget(req.url ?? '');
    if (!grant) return void client.end(refusal(407, 'forge egress proxy: this cell has no network grant'));
    const decision = target ? egressDecision(target.host, target.port, grant.rules) : null;
    if (!target || !decision?.host) return void client.end(refusal(400, `forge egress proxy: bad CONNECT target ${req.url}`));
    if (!decision.allowed) {
      grant.denied.record(matchingHost(decision.host), target.port, decision.refusedBy);
      return void client.end(refusal(403, deniedMessage(decision.host, target.port, decision.refusedBy, grant.allowNet)));
    }
    const host = decision.host;
    const upstream = connect({ port: target.port, host, lookup: this.lookup }, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', (e) =>
      client.end(refusal(502, `forge egress proxy: cannot reach ${netDestination(host, target.port)} (${e.message})`)),
    );
    client.on('close', () => upstream.destroy());
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const grant = this.authorize(req.headers['proxy-authorization'], req.socket);
    if (!grant) return void reply(res, 407, 'forge egress proxy: this cell has no network grant\n');
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return void reply(res, 400, 'forge egress proxy: only absolute http:// URLs are proxied (use CONNECT for https)\n');
    }
    if (url.protocol !== 'http:') return void reply(res, 400, `forge egress proxy: unsupported scheme ${url.protocol}\n`);
    const port = url.port === '' ? 80 : Number(url.port);
    const decision = egressDecision(url.hostname, port, grant.rules);
    if (!decision.host) return void reply(res, 400, `forge egress proxy: bad host in ${url.href}\n`);
    if (!decision.allowed) {
      grant.denied.record(matchingHost(decision.host), port, decision.refusedBy);
      return void reply(res, 403, deniedMessage(decision.host, port, decision.refusedBy, grant.allowNet) + '\n');
    }
    const host = decision.host;
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const upstream = httpRequest(
      { host, port, method: req.method, path: url.pathname + url.search, headers, lookup: this.lookup },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', (e) => reply(res, 502, `forge egress proxy: cannot reach ${host} (${e.message})\n`));
    req.pipe(upstream);
  }
}

function deniedMessage(host: string, port: number, refusedBy: 'allow_net' | 'deny_net', allowNet: readonly string[]): string {
  const to = netDestination(host, port);
  if (refusedBy === 'deny_net') return `forge egress proxy: ${to} is in this cell's deny_net`;
  return `forge egress proxy: ${to} is not in this cell's allow_net (${allowNet.join(', ')})`;
}

/**
 * A 407 names the scheme: clients that wait to be asked before sending credentials (git's
 * libcurl with http.proxyAuthMethod=anyauth, its default) send none otherwise.
 */
const AUTHENTICATE = 'Basic realm="forge egress proxy"';

function refusal(status: number, message: string): string {
  const reason = { 400: 'Bad Request', 403: 'Forbidden', 407: 'Proxy Authentication Required', 502: 'Bad Gateway' }[status] ?? 'Error';
  const body = message + '\n';
  const authenticate = status === 407 ? `Proxy-Authenticate: ${AUTHENTICATE}\r\n` : '';
  return `HTTP/1.1 ${status} ${reason}\r\n${authenticate}Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function reply(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, {
    'Content-Type': 'text/plain',
    Connection: 'close',
    ...(status === 407 ? { 'Proxy-Authenticate': AUTHENTICATE } : {}),
  });
  res.end(body);
}
