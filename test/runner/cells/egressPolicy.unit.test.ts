import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachingLookup } from '../../../runner/src/cells/egressLookup.js';
import fc from 'fast-check';
import { EgressDeniedLog, egressDeniedWarning } from '../../../runner/src/cells/egressDeniedLog.js';
import { egressDecision, egressRules, parseConnectTarget, parseProxyAuthorization } from '../../../runner/src/cells/egressPolicy.js';
import { checkedNetRules, netRuleList } from '../../../runner/src/cli/netRuleFlags.js';
import { CellSpecSchema } from '../../../runner/src/protocol/cellSpec.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { parseNetRule } from '../../../runner/src/protocol/netRule.js';
import { EgressProxy } from '../../../runner/src/cells/egressProxy.js';

describe('egress policy', () => {
  const allowed = (host: string, port: number, allow: string[], deny: string[] = []) =>
    egressDecision(host, port, egressRules(allow, deny)).allowed;

  it('matches exact names and *.suffix subdomains, case-insensitively', () => {
    const list = ['registry.example.org', '*.files.example.net', '10.0.0.5'];
    assert.equal(allowed('registry.example.org', 443, list), true);
    assert.equal(allowed('REGISTRY.example.org.', 443, list), true);
    assert.equal(allowed('evil-registry.example.org', 443, list), false);
    assert.equal(allowed('registry.example.org.attacker.invalid', 443, list), false);
    assert.equal(allowed('cdn.files.example.net', 443, list), true);
    assert.equal(allowed('files.example.net', 443, list), false);
    assert.equal(allowed('xfiles.example.net', 443, list), false);
    assert.equal(allowed('10.0.0.5', 443, list), true);
    assert.equal(allowed('10.0.0.6', 443, list), false);
    assert.equal(allowed('', 443, list), false);
  });

  it('a rule with a port allows only that port; one without allows every port', () => {
    const list = ['registry.npmjs.org:443', 'mirror.example.org', '[2001:db8::1]:8443'];
    assert.equal(allowed('registry.npmjs.org', 443, list), true);
    assert.equal(allowed('registry.npmjs.org', 80, list), false);
    assert.equal(allowed('mirror.example.org', 80, list), true);
    assert.equal(allowed('mirror.example.org', 8080, list), true);
    assert.equal(allowed('2001:db8::1', 8443, list), true);
    assert.equal(allowed('[2001:DB8:0::1]', 8443, list), true, 'the same address written another way');
    assert.equal(allowed('2001:db8::1', 443, list), false);
  });

  it('the deny list wins over the allowlist, and says which rule refused', () => {
    const rules = egressRules(['*.example.com', 'api.example.org'], ['secrets.example.com', 'api.example.org:22']);
    assert.deepEqual(egressDecision('secrets.example.com', 443, rules), {
      allowed: false,
      host: 'secrets.example.com',
      refusedBy: 'deny_net',
    });
    assert.deepEqual(egressDecision('cdn.example.com', 443, rules), { allowed: true, host: 'cdn.example.com' });
    assert.deepEqual(egressDecision('api.example.org', 22, rules), { allowed: false, host: 'api.example.org', refusedBy: 'deny_net' });
    assert.deepEqual(egressDecision('api.example.org', 443, rules), { allowed: true, host: 'api.example.org' });
    assert.deepEqual(egressDecision('other.example.net', 443, rules), {
      allowed: false,
      host: 'other.example.net',
      refusedBy: 'allow_net',
    });
  });

  it('an address written another way is still that address (127.1, a decimal, IPv6 spelled out): a deny on it holds', () => {
    const rules = egressRules(['*.example.com', '127.0.0.1', '[::1]'], ['127.0.0.1:22', '[::1]:22']);
    for (const h of ['127.1', '2130706433', '0x7f.0.0.1', '127.0.0.1.'])
      assert.deepEqual(egressDecision(h, 22, rules), { allowed: false, host: '127.0.0.1', refusedBy: 'deny_net' }, h);
    assert.equal(egressDecision('127.1', 80, rules).allowed, true);
    assert.deepEqual(egressDecision('0:0:0:0:0:0:0:1', 22, rules), { allowed: false, host: '::1', refusedBy: 'deny_net' });
    // A wildcard never matches an address, whatever its last labels (such a rule is refused as input, and would match nothing).
    assert.throws(() => egressRules(['*.3.4'], []), /a wildcard takes a domain name, not an IP address/);
    assert.equal(egressDecision('1.2.3.4', 443, { allow: [{ host: '3.4', wildcard: true, port: null }], deny: [] }).allowed, false);
    assert.equal(allowed('not a host', 443, ['*.example.com']), false);
  });

  // Labels start with a letter: a last label of digits (or 0x...) makes the name an IPv4 address to the URL parser.
  const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,8}[a-z0-9])?$/);
  const name = fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.'));
  const port = fc.integer({ min: 1, max: 65535 });
  const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
  const entry = fc.oneof(
    name,
    name.map((n) => `*.${n}`),
    ipv4,
    fc.tuple(name, port).map(([n, p]) => `${n}:${p}`),
    fc.tuple(name, port).map(([n, p]) => `*.${n}:${p}`),
    fc.tuple(ipv4, port).map(([a, p]) => `${a}:${p}`),
  );
  const host = fc.oneof(
    name,
    ipv4,
    fc.tuple(label, name).map(([l, n]) => `${l}.${n}`),
  );

  it('property: a destination the deny list matches is refused whatever the allowlist says; the deny list changes nothing else', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 6 }),
        fc.array(entry, { maxLength: 6 }),
        host,
        port,
        fc.nat(3),
        (allow, deny, h, p, pick) => {
          // Often a deny entry that names this destination (itself, with its port, its parent domain), sometimes none.
          const naming = [h, `${h}:${p}`, `*.${h.split('.').slice(1).join('.')}`, null][pick];
          const denyList = naming && !('error' in parseNetRule(naming)) ? [...deny, naming] : deny;
          const byDeny = egressDecision(h, p, egressRules([], denyList));
          // The allowlist names the destination itself and every deny entry.
          const allowList = [...allow, h, ...denyList];
          const d = egressDecision(h, p, egressRules(allowList, denyList));
          if (!byDeny.allowed && byDeny.refusedBy === 'deny_net') assert.deepEqual(d, { allowed: false, host: h, refusedBy: 'deny_net' });
          else assert.deepEqual(d, egressDecision(h, p, egressRules(allowList, [])));
        },
      ),
    );
  });

  it('property: a port rule allows its port and no other; a rule without one allows all', () => {
    fc.assert(
      fc.property(fc.oneof(name, ipv4), port, port, (h, p, q) => {
        assert.equal(allowed(h, p, [`${h}:${p}`]), true);
        assert.equal(allowed(h, q, [`${h}:${p}`]), p === q);
        assert.equal(allowed(h, q, [h]), true);
      }),
    );
  });

  it('property: *.x matches exactly the names ending in .x (never x itself); an address only its own exact rule', () => {
    fc.assert(
      fc.property(name, label, name, port, (x, sub, other, p) => {
        assert.equal(allowed(`${sub}.${x}`, p, [`*.${x}`]), true);
        assert.equal(allowed(x, p, [`*.${x}`]), false);
        assert.equal(allowed(other, p, [`*.${x}`]), other.endsWith(`.${x}`));
      }),
    );
    fc.assert(
      fc.property(ipv4, ipv4, port, (a, b, p) => {
        assert.equal(allowed(a, p, [b]), a === b);
        const wildcard = { host: a.split('.').slice(1).join('.'), wildcard: true, port: null };
        assert.equal(egressDecision(a, p, { allow: [wildcard], deny: [] }).allowed, false);
      }),
    );
  });

  it('entries are checked: a bad one is a one-line error that says how to write one', () => {
    assert.deepEqual(parseNetRule('registry.npmjs.org:443'), { host: 'registry.npmjs.org', wildcard: false, port: 443 });
    assert.deepEqual(parseNetRule('*.Example.COM'), { host: 'example.com', wildcard: true, port: null });
    assert.deepEqual(parseNetRule('[2001:DB8::1]:8443'), { host: '2001:db8::1', wildcard: false, port: 8443 });
    assert.deepEqual(parseNetRule('[::1]'), { host: '::1', wildcard: false, port: null });
    const bad: [string, RegExp][] = [
      ['host:99999', /^host:99999: the port must be a number from 1 to 65535 \(got "99999"\); pass HOST or HOST:PORT/],
      ['host:abc', /^host:abc: the port must be a number from 1 to 65535 \(got "abc"\)/],
      ['host:0', /the port must be a number from 1 to 65535/],
      ['host:', /the port must be a number/],
      ['', /^an entry is empty; pass HOST or HOST:PORT/],
      ['  ', /^an entry is empty/],
      ['2001:db8::1', /^2001:db8::1: an IPv6 address goes in brackets, e.g. \[2001:db8::1\]/],
      ['[1.2.3.4]', /not a host/],
      ['[zz::]', /not a host/],
      ['*.10.0.0.1', /a wildcard takes a domain name, not an IP address/],
      ['exa mple.com', /not a host/],
      ['a..b', /not a host/],
      ['http://example.com', /not a host|port/],
      ['*', /not a host/],
    ];
    for (const [e, re] of bad) {
      const r = parseNetRule(e);
      assert.ok('error' in r, `${JSON.stringify(e)} was taken as ${JSON.stringify(r)}`);
      assert.match(r.error, re, e);
      assert.equal(r.error.split('\n').length, 1);
    }
    assert.throws(() => egressRules(['ok.example'], ['bad:port']), /^Error: deny_net: bad:port: the port must be/);
  });

  it('the schemas and the CLI refuse a bad entry with one line naming it', () => {
    assert.equal(
      CellSpecSchema.safeParse({ cmd: 'x', allow_net: ['registry.npmjs.org:443', '[::1]'], deny_net: ['*.x.test'] }).success,
      true,
    );
    const spec = CellSpecSchema.safeParse({ cmd: 'x', allow_net: ['ok.test'], deny_net: ['host:99999'] });
    assert.equal(spec.success, false);
    assert.match(spec.error!.issues[0]!.message, /^host:99999: the port must be a number from 1 to 65535/);
    assert.deepEqual(CellSpecSchema.parse({ cmd: 'x' }).deny_net, []);
    assert.throws(
      () => checkedNetRules('--deny-net', ['host:abc']),
      (e: Error) => e instanceof InputError && /^--deny-net host:abc: the port must be/.test(e.message),
    );
    assert.throws(() => checkedNetRules('--allow-net', ['']), /^InputError: --allow-net: an entry is empty/);
    assert.deepEqual(netRuleList(['a.test, b.test:80', 'c.test']), ['a.test', 'b.test:80', 'c.test']);
  });

  it('the denied record is bounded: the first 20 destinations, each counted, then one number for the rest', () => {
    let t = 0;
    const log = new EgressDeniedLog(() => new Date(Date.UTC(2026, 0, 1, 0, 0, t++)));
    for (let i = 0; i < 30; i++) log.record(`h${i}.test`, 443, 'allow_net');
    log.record('h0.test', 443, 'allow_net');
    log.record('h0.test', 80, 'deny_net');
    log.record('h29.test', 443, 'allow_net');
    const { denied, more } = log.summary();
    assert.equal(denied.length, 20);
    assert.deepEqual(denied[0], { host: 'h0.test', port: 443, count: 2, first_at: '2026-01-01T00:00:00.000Z', refused_by: 'allow_net' });
    assert.equal(more, 12, '10 destinations past the first 20, one of them twice, and h0.test:80');
    assert.match(
      egressDeniedWarning({ denied, more })!,
      /^egress refused \(not in allow_net, or in deny_net\): h0\.test:443 x2, h1\.test:443, .*, and 12 request\(s\) for other destinations$/,
    );
    assert.equal(egressDeniedWarning({ denied: [], more: 0 }), null);
  });

  it('parses CONNECT targets and rejects malformed ones', () => {
    assert.deepEqual(parseConnectTarget('example.com:443'), { host: 'example.com', port: 443 });
    assert.deepEqual(parseConnectTarget('[::1]:8080'), { host: '::1', port: 8080 });
    assert.equal(parseConnectTarget('example.com'), null);
    assert.equal(parseConnectTarget('example.com:99999'), null);
    assert.equal(parseConnectTarget('a:b:1'), null);
  });

  it('reads the cell id and token from Proxy-Authorization', () => {
    const header = 'Basic ' + Buffer.from('cell-1:s3cr:et').toString('base64');
    assert.deepEqual(parseProxyAuthorization(header), { cellId: 'cell-1', token: 's3cr:et' });
    assert.equal(parseProxyAuthorization(undefined), null);
    assert.equal(parseProxyAuthorization('Bearer x'), null);
    assert.equal(parseProxyAuthorization('Basic ' + Buffer.from('nocolon').toString('base64')), null);
  });
});

describe('egress proxy: a cell socket speaks for its own cell only', () => {
  const ask = (socket: string, auth: string | null) =>
    new Promise<string>((resolve, reject) => {
      const c = connect(socket, () => {
        const header = auth ? `Proxy-Authorization: Basic ${Buffer.from(auth).toString('base64')}\r\n` : '';
        c.write(`GET http://unlisted.example/ HTTP/1.1\r\nHost: unlisted.example\r\n${header}Connection: close\r\n\r\n`);
      });
      let data = '';
      c.on('data', (d) => (data += d.toString()));
      c.on('end', () => resolve(data.split('\r\n\r\n')[0]!));
      c.on('error', reject);
    });

  it("refuses another cell's valid token (407) and checks its own against the allowlist", async () => {
    const proxy = new EgressProxy('127.0.0.1');
    const dir = mkdtempSync(join(tmpdir(), 'forge-proxy-test-'));
    const { token: tokenA } = proxy.grant('cell-a', { allow_net: ['registry.example.org'], deny_net: [] });
    const { token: tokenB } = proxy.grant('cell-b', { allow_net: ['unlisted.example.attacker.invalid'], deny_net: [] });
    const a = await proxy.serveCell('cell-a', join(dir, 'a.sock'));
    try {
      assert.match(await ask(join(dir, 'a.sock'), `cell-b:${tokenB}`), /^HTTP\/1\.1 407/);
      // Named the scheme: git (libcurl's anyauth) sends its credentials only when asked this way.
      assert.match(await ask(join(dir, 'a.sock'), null), /^HTTP\/1\.1 407 [^]*\r\nproxy-authenticate: Basic realm="forge egress proxy"/i);
      assert.match(await ask(join(dir, 'a.sock'), `cell-a:${tokenA}`), /^HTTP\/1\.1 403/);
      const { denied, more } = proxy.revoke('cell-a');
      assert.deepEqual(
        denied.map(({ first_at: _, ...d }) => d),
        [{ host: 'unlisted.example', port: 80, count: 1, refused_by: 'allow_net' }],
      );
      assert.equal(more, 0);
      assert.match(await ask(join(dir, 'a.sock'), `cell-a:${tokenA}`), /^HTTP\/1\.1 407/, 'a revoked grant');
    } finally {
      await a.close();
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the egress proxy: a token bound to its cell’s relay (swarm cells, red team)', () => {
  it('counts only from the address it was bound to: from anywhere else the same valid token gets 407', async () => {
    const proxy = new EgressProxy('127.0.0.1');
    const port = await proxy.start();
    const ask = (auth: string) =>
      new Promise<string>((resolve, reject) => {
        const c = connect({ host: '127.0.0.1', port }, () =>
          c.write(
            `GET http://unlisted.example/ HTTP/1.1\r\nHost: unlisted.example\r\nProxy-Authorization: Basic ${Buffer.from(auth).toString('base64')}\r\nConnection: close\r\n\r\n`,
          ),
        );
        let data = '';
        c.on('data', (d) => (data += d.toString()));
        c.on('end', () => resolve(data.split('\r\n')[0]!));
        c.on('error', reject);
      });
    try {
      const here = proxy.grant('cell-here', { allow_net: ['registry.example.org'], deny_net: [] }, '127.0.0.1');
      const elsewhere = proxy.grant('cell-elsewhere', { allow_net: ['unlisted.example'], deny_net: [] }, '10.9.9.9');
      const unbound = proxy.grant('cell-unbound', { allow_net: ['registry.example.org'], deny_net: [] });
      assert.match(await ask(`cell-here:${here.token}`), /^HTTP\/1\.1 403/, 'bound here: judged by its allowlist');
      assert.match(await ask(`cell-elsewhere:${elsewhere.token}`), /^HTTP\/1\.1 407/, 'bound to another relay');
      assert.match(await ask(`cell-unbound:${unbound.token}`), /^HTTP\/1\.1 403/, 'unbound: any address');
    } finally {
      await proxy.close();
    }
  });
});

describe('the egress proxy’s name lookups (a burst of tunnels to one registry)', () => {
  const lookupOnce = (fn: ReturnType<typeof cachingLookup>, host: string, family = 0) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: string }>((resolve) =>
      fn(host, { family }, (err, address) => resolve({ err, address: address as string })),
    );

  it('asks the resolver once for a burst of the same name, and again after a minute or a failure', async () => {
    let clock = 0;
    const asked: string[] = [];
    let fail = false;
    const resolver = ((host: string, _o: unknown, cb: (e: Error | null, a: { address: string; family: number }[]) => void) => {
      asked.push(host);
      setImmediate(() =>
        fail ? cb(Object.assign(new Error('EAI_AGAIN'), { code: 'EAI_AGAIN' }), []) : cb(null, [{ address: '203.0.113.7', family: 4 }]),
      );
    }) as unknown as typeof import('node:dns').lookup;
    const fn = cachingLookup(resolver, () => clock);
    const burst = await Promise.all(Array.from({ length: 40 }, () => lookupOnce(fn, 'registry.npmjs.org')));
    assert.deepEqual(new Set(burst.map((b) => b.address)), new Set(['203.0.113.7']));
    assert.equal(asked.length, 1);
    assert.equal((await lookupOnce(fn, 'registry.npmjs.org', 6)).err?.code, 'ENOTFOUND', 'no IPv6 address: not found for family 6');
    clock = 61_000;
    fail = true;
    assert.equal((await lookupOnce(fn, 'registry.npmjs.org')).err?.code, 'EAI_AGAIN');
    fail = false;
    assert.equal((await lookupOnce(fn, 'registry.npmjs.org')).address, '203.0.113.7');
    assert.equal(asked.length, 3, 'an expired name and a failed lookup are asked again');
  });
});
