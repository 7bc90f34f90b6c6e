import assert from 'node:assert/strict';
import { requireQemu } from '../../helpers/qemu.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QemuCellProvider } from '../../../runner/src/cells/providers/qemuCellProvider.js';
import { makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';

describe('qemu cells run real projects with host toolchains (read-only root over virtiofs)', function () {
  this.timeout(300_000);
  let provider: QemuCellProvider;
  let stateDir: string;
  before(function () {
    requireQemu(this);
    stateDir = mkdtempSync(join(tmpdir(), 'forge-qemu-proj-'));
    provider = new QemuCellProvider({ stateDir });
  });
  after(async () => {
    await provider?.drain();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('a Python project: unittest green, and a broken test is red', async () => {
    const repo = makeRepo({
      'calc.py': 'def add(a, b):\n    return a + b\n',
      'test_calc.py':
        'import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == "__main__":\n    unittest.main()\n',
    });
    try {
      const green = await provider.run({ worktree: repo.dir, cmd: '/usr/bin/python3 -m unittest -v', timeout_s: 240 });
      assert.equal(green.exit_code, 0, green.output);
      assert.match(green.output, /Ran 1 test[\s\S]*OK/);
      const red = await provider.run({
        worktree: repo.dir,
        cmd: "sed -i 's/a + b/a - b/' calc.py && /usr/bin/python3 -m unittest",
        timeout_s: 240,
      });
      assert.equal(red.exit_code, 1);
      assert.match(red.output, /FAILED/);
      assert.deepEqual(
        red.diff?.files.map((f) => f.path),
        ['calc.py'],
        'the edit made in the VM is in the host diff',
      );
    } finally {
      repo.cleanup();
    }
  });

  it('a Node project: node --test green', async () => {
    const repo = makeRepo({
      'package.json': '{"name":"p","version":"1.0.0","type":"module"}\n',
      'slug.js': "export const slug = (s) => s.toLowerCase().trim().replace(/\\s+/g, '-');\n",
      'slug.test.js':
        "import test from 'node:test';\nimport assert from 'node:assert';\nimport { slug } from './slug.js';\ntest('slug', () => assert.equal(slug(' Hello World '), 'hello-world'));\n",
    });
    try {
      const r = await provider.run({ worktree: repo.dir, cmd: 'node --test', timeout_s: 240 });
      assert.equal(r.exit_code, 0, r.output);
      assert.match(r.output, /# pass 1/);
    } finally {
      repo.cleanup();
    }
  });

  it('boots a Docker image as its root (the bake output serves docker and qemu cells)', async function () {
    const why = await dockerUnavailable(TEST_IMAGES.busybox);
    requireFeature(this, why === null, why ?? '');
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      const r = await provider.run({
        image: TEST_IMAGES.busybox,
        worktree: repo.dir,
        cmd: 'test ! -e /usr/bin/node && test ! -e /etc/debian_version && busybox true && echo from-image >> a.txt && echo $PATH',
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.equal(r.image, TEST_IMAGES.busybox);
      assert.deepEqual(
        r.diff?.files.map((f) => f.path),
        ['a.txt'],
      );
      const again = await provider.run({ image: TEST_IMAGES.busybox, cmd: 'true' });
      assert.equal(again.exit_code, 0, 'the exported root is cached and reused');
    } finally {
      repo.cleanup();
    }
  });
});
