import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachingLookup } from '../../../runner/src/cells/egressLookup.js';
import { hostAllowed, parseConnectTarget, parseProxyAuthorization } from '../../../runner/src/cells/egressPolicy.js';
import { EgressProxy } from '../../../runner/src/cells/egressProxy.js';

describe('egress policy', () => {
  it('matches exact names and *.suffix subdomains, case-insensitively', () => {
    const list = ['registry.example.org', '*.files.example.net', '10.0.0.5'];
    assert.equal(hostAllowed('registry.example.org', list), true);
    assert.equal(hostAllowed('REGISTRY.example.org.', list), true);
    assert.equal(hostAllowed('evil-registry.example.org', list), false);
    assert.equal(hostAllowed('registry.example.org.attacker.invalid', list), false);
    assert.equal(hostAllowed('cdn.files.example.net', list), true);
    assert.equal(hostAllowed('files.example.net', list), false);
    assert.equal(hostAllowed('xfiles.example.net', list), false);
    assert.equal(hostAllowed('10.0.0.5', list), true);
    assert.equal(hostAllowed('10.0.0.6', list), false);
    assert.equal(hostAllowed('', list), false);
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
    const { token: tokenA } = proxy.grant('cell-a', ['registry.example.org']);
    const { token: tokenB } = proxy.grant('cell-b', ['unlisted.example.attacker.invalid']);
    const a = await proxy.serveCell('cell-a', join(dir, 'a.sock'));
    try {
      assert.match(await ask(join(dir, 'a.sock'), `cell-b:${tokenB}`), /^HTTP\/1\.1 407/);
      // Named the scheme: git (libcurl's anyauth) sends its credentials only when asked this way.
      assert.match(await ask(join(dir, 'a.sock'), null), /^HTTP\/1\.1 407 [^]*\r\nproxy-authenticate: Basic realm="forge egress proxy"/i);
      assert.match(await ask(join(dir, 'a.sock'), `cell-a:${tokenA}`), /^HTTP\/1\.1 403/);
      assert.deepEqual(proxy.revoke('cell-a'), ['unlisted.example']);
      assert.match(await ask(join(dir, 'a.sock'), `cell-a:${tokenA}`), /^HTTP\/1\.1 407/, 'a revoked grant');
    } finally {
      await a.close();
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
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
