import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dependencyFingerprint, dependencyLayerTar, leftOutWarnings } from '../../../runner/src/cells/swarm/dependencyLayer.js';
import { readTar } from '../../../runner/src/cells/swarm/tarArchive.js';

describe('swarm dependency layer: identity and what it carries (in-process, a temporary tree)', () => {
  let dir: string;
  let nm: string;
  const deps = () => [{ source: nm, target: '/work/node_modules' }];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'forge-deps-layer-'));
    nm = join(dir, 'node_modules');
    mkdirSync(join(nm, 'dep'), { recursive: true });
    writeFileSync(join(nm, 'dep', 'index.js'), 'module.exports = 1;\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a change of content with the same size and the same times is another layer', () => {
    const file = join(nm, 'dep', 'index.js');
    const when = new Date('2020-01-02T03:04:05Z');
    utimesSync(file, when, when);
    const before = dependencyFingerprint(deps()).fingerprint;
    writeFileSync(file, 'module.exports = 2;\n');
    utimesSync(file, when, when);
    assert.notEqual(dependencyFingerprint(deps()).fingerprint, before);
    writeFileSync(file, 'module.exports = 1;\n');
    utimesSync(file, when, when);
    assert.equal(dependencyFingerprint(deps()).fingerprint, before, 'the same tree is the same layer');
  });

  it("the layer's own fingerprint is the walk's, and it leaves out what others may not read", () => {
    writeFileSync(join(nm, 'dep', 'key.pem'), 'secret\n', { mode: 0o600 });
    chmodSync(join(nm, 'dep', 'key.pem'), 0o600);
    mkdirSync(join(nm, 'closed'));
    writeFileSync(join(nm, 'closed', 'x'), 'x\n');
    // Others may enter it, not list it.
    chmodSync(join(nm, 'closed'), 0o711);
    const walk = dependencyFingerprint(deps());
    const layer = dependencyLayerTar(deps(), 65532);
    assert.equal(layer.fingerprint, walk.fingerprint);
    const names = readTar(Buffer.concat(layer.parts)).entries.map((e) => e.name);
    assert.deepEqual(names.sort(), ['work/node_modules', 'work/node_modules/dep', 'work/node_modules/dep/index.js'].sort());
    assert.deepEqual(walk.leftOut, [{ target: '/work/node_modules', unreadable: ['closed', 'dep/key.pem'], otherDevice: [] }]);
    assert.deepEqual(
      leftOutWarnings(walk.leftOut, () => 'node_modules'),
      ['2 entries of node_modules are not readable by the cell user and were not sent: closed, dep/key.pem'],
    );
  });

  it('a source reached through a symbolic link is refused with one line', () => {
    symlinkSync(nm, join(dir, 'vendor'));
    assert.throws(
      () => dependencyFingerprint([{ source: join(dir, 'vendor'), target: '/work/vendor' }]),
      (e: Error) =>
        e.message.startsWith(`shared dependency ${join(dir, 'vendor')} passes through the symbolic link ${join(dir, 'vendor')}; `) &&
        !e.message.includes('\n'),
    );
  });

  it('a file name that is not UTF-8 is refused with one line naming it, not a raw ENOENT (red team, issue 28)', () => {
    writeFileSync(Buffer.concat([Buffer.from(`${nm}/dep/`), Buffer.from([0x61, 0xff])]), 'x');
    assert.throws(
      () => dependencyFingerprint(deps()),
      (e: Error) =>
        e.constructor.name === 'InputError' &&
        /has a file name that is not UTF-8 \(a\\xff in dep\)/.test(e.message) &&
        /--no-shared-deps/.test(e.message) &&
        !e.message.includes('\n'),
    );
  });
});
