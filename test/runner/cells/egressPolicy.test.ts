import assert from 'node:assert/strict';
import { hostAllowed, parseConnectTarget, parseProxyAuthorization } from '../../../runner/src/cells/egressPolicy.js';

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
