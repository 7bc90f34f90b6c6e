import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REGISTRY_LIMITS, nextPage, RegistryApi } from '../../../runner/src/cells/swarm/registryApi.js';
import { leaseFileName, leaseRegistryTag, readRegistryLeases } from '../../../runner/src/cells/swarm/registryLeases.js';
import { pushLabels, stateDirId } from '../../../runner/src/cells/swarm/registryOwnership.js';
import { judgeRegistryTags, type RegistryLiveness, type RegistryTag } from '../../../runner/src/cells/swarm/registryTagVerdicts.js';

const HOST = 'runner-host';
const STATE = '/state/forge-cells';
const DEAD = 1111;
const LIVE = 2222;
const digest = (n: number) => `sha256:${String(n).padStart(64, '0')}`;

function tag(repository: string, name: string, d: number, pid: number | null, extra: Partial<RegistryTag> = {}): RegistryTag {
  return {
    repository,
    tag: name,
    digest: digest(d),
    labels: pid === null ? {} : pushLabels({ pid, host: HOST, stateDir: STATE }),
    ...extra,
  };
}

function liveness(over: Partial<RegistryLiveness> = {}): RegistryLiveness {
  return {
    host: HOST,
    stateId: stateDirId(STATE),
    isAlive: (pid) => pid === LIVE,
    leases: [],
    serviceDigests: new Set(),
    ...over,
  };
}

const verdictOf = (tags: RegistryTag[], live = liveness()) =>
  Object.fromEntries(judgeRegistryTags(tags, live).map((v) => [`${v.repository}:${v.tag}`, v]));

describe('registry hygiene: which tags gc deletes', () => {
  it("deletes a gone runner's input tags and leaves a live runner's", () => {
    const v = verdictOf([tag('forge-cell-input', 'gone', 1, DEAD), tag('forge-cell-input', 'live', 2, LIVE)]);
    assert.equal(v['forge-cell-input:gone']!.action, 'delete');
    assert.equal(v['forge-cell-input:gone']!.reason, `runner ${DEAD}@${HOST} gone`);
    assert.equal(v['forge-cell-input:live']!.action, 'leave');
    assert.match(v['forge-cell-input:live']!.reason, /is alive/);
  });

  it('never deletes base images, whoever pushed them', () => {
    const v = verdictOf([tag('forge-cell-base', 'b', 3, DEAD)]);
    assert.equal(v['forge-cell-base:b']!.action, 'leave');
  });

  it("deletes a gone runner's deps tag only when no live runner of its state directory leases it and no live service names it", () => {
    const tags = [
      tag('forge-cell-deps', 'free', 4, DEAD),
      tag('forge-cell-deps', 'leased', 5, DEAD),
      tag('forge-cell-deps', 'served', 6, DEAD),
    ];
    const v = verdictOf(
      tags,
      liveness({
        leases: [
          { pid: LIVE, host: HOST, tags: ['forge-cell-deps:leased'], truncated: false },
          // A gone process's lease protects nothing.
          { pid: DEAD, host: HOST, tags: ['forge-cell-deps:free'], truncated: false },
        ],
        serviceDigests: new Set([digest(6)]),
      }),
    );
    assert.equal(v['forge-cell-deps:free']!.action, 'delete');
    assert.match(v['forge-cell-deps:free']!.reason, /^runner 1111@runner-host gone; no live runner or service uses it$/);
    assert.equal(v['forge-cell-deps:leased']!.action, 'leave');
    assert.match(v['forge-cell-deps:leased']!.reason, /in use by live runner 2222/);
    assert.equal(v['forge-cell-deps:served']!.action, 'leave');
    assert.match(v['forge-cell-deps:served']!.reason, /swarm service uses it/);
  });

  it("leaves a deps tag of another state directory (its runners' leases are not visible), another host's, or an unlabelled one", () => {
    const other = { ...tag('forge-cell-deps', 'other-state', 7, DEAD) };
    other.labels = pushLabels({ pid: DEAD, host: HOST, stateDir: '/elsewhere' });
    const far = tag('forge-cell-deps', 'far', 8, DEAD);
    far.labels = pushLabels({ pid: DEAD, host: 'elsewhere.example', stateDir: STATE });
    const v = verdictOf([other, far, tag('forge-cell-deps', 'old', 9, null), tag('forge-cell-input', 'old', 10, null)]);
    assert.match(v['forge-cell-deps:other-state']!.reason, /another state directory/);
    assert.match(v['forge-cell-deps:far']!.reason, /on another host/);
    assert.match(v['forge-cell-deps:old']!.reason, /no forge-runner labels/);
    assert.match(v['forge-cell-input:old']!.reason, /no forge-runner labels/);
    assert.ok(Object.values(v).every((x) => x.action === 'leave'));
  });

  it("keeps leases of another host's process, and every deps tag while a live lease is too large to read", () => {
    const t = [tag('forge-cell-deps', 'd', 11, DEAD)];
    const far = verdictOf(t, liveness({ leases: [{ pid: DEAD, host: 'other', tags: ['forge-cell-deps:d'], truncated: false }] }));
    assert.equal(far['forge-cell-deps:d']!.action, 'leave');
    const big = verdictOf(t, liveness({ leases: [{ pid: LIVE, host: HOST, tags: [], truncated: true }] }));
    assert.match(big['forge-cell-deps:d']!.reason, /too large/);
  });

  it('deletes a digest only when every tag naming it is stale (a delete takes all its tags)', () => {
    const shared = [tag('forge-cell-input', 'a', 12, DEAD), tag('forge-cell-input', 'b', 12, DEAD)];
    shared[1]!.labels = pushLabels({ pid: LIVE, host: HOST, stateDir: STATE });
    // Same digest, different labels cannot happen for a real manifest, but the registry is anyone's.
    const v = verdictOf(shared);
    assert.equal(v['forge-cell-input:a']!.action, 'leave');
    assert.match(v['forge-cell-input:a']!.reason, /also forge-cell-input:b/);
  });

  it('leaves what it could not read, and labels that are not a pid; says control characters safely', () => {
    const unreadable: RegistryTag = {
      repository: 'forge-cell-input',
      tag: 'x',
      digest: null,
      labels: null,
      unreadable: 'could not be read: HTTP 500 reading the manifest',
    };
    const bad = tag('forge-cell-input', 'bad', 13, DEAD);
    bad.labels = { ...bad.labels!, 'forge.pushed-by.pid': '12\n34' };
    const v = verdictOf([unreadable, bad]);
    assert.equal(v['forge-cell-input:x']!.reason, 'could not be read: HTTP 500 reading the manifest');
    assert.equal(v['forge-cell-input:bad']!.action, 'leave');
    assert.doesNotMatch(v['forge-cell-input:bad']!.reason, /\n/);
  });
});

describe('registry hygiene: leases and the registry API', () => {
  it('reads back the leases a runner wrote, per process', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-leases-'));
    try {
      leaseRegistryTag(dir, { pid: 42, host: 'h/x' }, '127.0.0.1:5000', 'forge-cell-deps', 't1');
      leaseRegistryTag(dir, { pid: 42, host: 'h/x' }, '127.0.0.1:5000', 'forge-cell-base', 't2');
      writeFileSync(join(dir, 'registry-leases', 'junk'), 'x');
      const leases = readRegistryLeases(dir);
      assert.equal(leases.length, 1);
      assert.equal(leaseFileName(42, 'h/x'), '42@h_x');
      assert.deepEqual(leases[0]!.entries, ['127.0.0.1:5000 forge-cell-deps:t1', '127.0.0.1:5000 forge-cell-base:t2']);
      assert.equal(leases[0]!.truncated, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("follows only this repository's next-page links", () => {
    assert.equal(
      nextPage('</v2/forge-cell-input/tags/list?n=2&last=b>; rel="next"', 'forge-cell-input'),
      '/v2/forge-cell-input/tags/list?n=2&last=b',
    );
    assert.equal(nextPage('<http://evil.example/v2/forge-cell-input/tags/list?n=2>; rel="next"', 'forge-cell-input'), null);
    assert.equal(nextPage('</v2/other/tags/list?n=2>; rel="next"', 'forge-cell-input'), null);
    assert.equal(nextPage(null, 'forge-cell-input'), null);
  });

  it('refuses oversized and misnamed answers, and pages through tags', async () => {
    const config = Buffer.from(JSON.stringify({ config: { Labels: { a: 'b', n: 1 } } }));
    const configDigest = `sha256:${createHash('sha256').update(config).digest('hex')}`;
    const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, config: { digest: configDigest } }));
    const serve = (req: IncomingMessage, res: ServerResponse) => {
      const url = req.url ?? '';
      if (url === '/v2/r/tags/list?n=1000') {
        res.setHeader('Link', '</v2/r/tags/list?n=1000&last=a>; rel="next"');
        return res.end(JSON.stringify({ tags: ['a', '../bad'] }));
      }
      if (url === '/v2/r/tags/list?n=1000&last=a') return res.end(JSON.stringify({ tags: ['b'] }));
      if (url === '/v2/r/manifests/good') return res.end(manifest);
      if (url === '/v2/r/manifests/lying') {
        res.setHeader('Docker-Content-Digest', digest(1));
        return res.end(manifest);
      }
      if (url === '/v2/r/manifests/huge') return res.end(Buffer.alloc(DEFAULT_REGISTRY_LIMITS.maxManifestBytes + 1, 0x20));
      if (url === `/v2/r/blobs/${configDigest}`) return res.end(config);
      res.statusCode = 404;
      res.end();
    };
    const server = createServer(serve);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const api = new RegistryApi((path) => `http://127.0.0.1:${port}${path}`);
      assert.deepEqual(await api.tags('r'), { tags: ['a', 'b'], truncated: false });
      assert.deepEqual(await api.tags('none'), { tags: [], truncated: false });
      const m = await api.manifest('r', 'good');
      assert.equal(m.configDigest, configDigest);
      assert.equal(m.digest, `sha256:${createHash('sha256').update(manifest).digest('hex')}`);
      assert.deepEqual(await api.configLabels('r', configDigest), { a: 'b' });
      await assert.rejects(api.manifest('r', 'lying'), /but its manifest is/);
      await assert.rejects(api.manifest('r', 'huge'), /over 1048576/);
      await assert.rejects(api.manifest('r', '../x'), /is not a tag/);
      await assert.rejects(api.configLabels('r', digest(2)), /HTTP 404/);
    } finally {
      server.close();
    }
  });
});
