import assert from 'node:assert/strict';
import Docker from 'dockerode';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bakeImage } from '../../../runner/src/images/bakeImage.js';
import { DockerCellProvider } from '../../../runner/src/cells/providers/dockerCellProvider.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';

const PROJECTS: Record<string, Record<string, string>> = {
  python: {
    'pytest.ini': '[pytest]\naddopts = -p no:cacheprovider\n',
    'calc.py': 'def add(a, b):\n    return a + b\n',
    'test_calc.py':
      'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_add_negative():\n    assert add(-1, 1) == 0\n',
  },
  node: {
    'package.json': JSON.stringify({ name: 'sample', version: '1.0.0', private: true, scripts: { test: 'node --test' } }, null, 2) + '\n',
    'package-lock.json':
      JSON.stringify(
        { name: 'sample', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'sample', version: '1.0.0' } } },
        null,
        2,
      ) + '\n',
    'sum.js': 'module.exports = (a, b) => a + b;\n',
    'sum.test.js':
      "const test = require('node:test');\nconst assert = require('node:assert');\nconst sum = require('./sum');\ntest('adds', () => assert.strictEqual(sum(2, 3), 5));\n",
  },
  c: {
    '.gitignore': 'check\n',
    Makefile: 'test: check\n\t./check\n\ncheck: check.c mul.c\n\tcc -Wall -o check check.c mul.c\n\n.PHONY: test\n',
    'mul.c': 'int mul(int a, int b) { return a * b; }\n',
    'check.c':
      '#include <stdio.h>\nint mul(int, int);\nint main(void) { if (mul(6, 7) != 42) { puts("FAIL mul"); return 1; } puts("ok mul"); return 0; }\n',
  },
};

/** A bug per project, so each green run is shown to be able to go red. */
const BREAK: Record<string, [string, string]> = {
  python: ['calc.py', 'def add(a, b):\n    return a - b\n'],
  node: ['sum.js', 'module.exports = (a, b) => a * b;\n'],
  c: ['mul.c', 'int mul(int a, int b) { return a + b; }\n'],
};

describe('stacks in docker cells from a baked image', function () {
  this.timeout(300_000);
  let provider: DockerCellProvider;
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });

  before(async function () {
    const why = await dockerUnavailable(TEST_IMAGES.bookworm);
    requireFeature(this, why === null, why ?? '');
    provider = new DockerCellProvider();
  });
  after(async () => provider?.drain());

  for (const [name, files] of Object.entries(PROJECTS)) {
    it(`${name}: bakes, runs its detected test command green, and red once broken`, async () => {
      const repo = makeRepo(files);
      try {
        const baked = await bakeImage(docker, { repo: repo.dir, base: TEST_IMAGES.bookworm });
        assert.ok(baked.test, `no test command detected for ${name}`);
        assert.match(baked.image, /^forge-prj-[0-9a-f]{16}:bootstrap$/);
        assert.ok(existsSync(join(repo.dir, '.forge', 'bake.json')));
        assert.equal(git(repo.dir, 'status', '--porcelain'), '', '.forge/ must not show up in git status');

        const green = await provider.run({ image: baked.image, worktree: repo.dir, cmd: baked.test!, timeout_s: 120 });
        assert.equal(green.exit_code, 0, green.output);
        assert.equal(green.provider, 'docker');

        writeFileSync(join(repo.dir, BREAK[name]![0]), BREAK[name]![1]);
        const red = await provider.run({ image: baked.image, worktree: repo.dir, cmd: baked.test!, timeout_s: 120 });
        assert.notEqual(red.exit_code, 0, `a broken ${name} project still passed:\n${red.output}`);
        assert.deepEqual(
          red.diff?.files.map((f) => f.path),
          [BREAK[name]![0]],
        );
      } finally {
        repo.cleanup();
      }
    });
  }

  it('a second bake with nothing changed reuses the image; a lockfile change bakes anew', async () => {
    const repo = makeRepo(PROJECTS.node!);
    try {
      const first = await bakeImage(docker, { repo: repo.dir, base: TEST_IMAGES.bookworm });
      const again = await bakeImage(docker, { repo: repo.dir, base: TEST_IMAGES.bookworm });
      assert.equal(again.reused, true);
      assert.equal(again.image, first.image);
      const lock = JSON.parse(readFileSync(join(repo.dir, 'package-lock.json'), 'utf8'));
      // Unique per run, so an image left by an earlier run cannot be reused.
      lock.version = `1.0.${Date.now()}`;
      writeFileSync(join(repo.dir, 'package-lock.json'), JSON.stringify(lock));
      const changed = await bakeImage(docker, { repo: repo.dir, base: TEST_IMAGES.bookworm });
      assert.equal(changed.reused, false);
      assert.notEqual(changed.image, first.image);
      await docker
        .getImage(changed.image)
        .remove()
        .catch(() => undefined);
      const custom = await bakeImage(docker, { repo: repo.dir, base: TEST_IMAGES.bookworm, install: 'echo custom > /custom-step' });
      assert.notEqual(custom.image, changed.image);
      const r = await provider.run({ image: custom.image, cmd: 'cat /custom-step' });
      assert.equal(r.output, 'custom\n');
      await provider.drain();
      await docker
        .getImage(custom.image)
        .remove()
        .catch(() => undefined);
    } finally {
      repo.cleanup();
    }
  });

  it('forge-runner bake whose install step fails: exit 2, one line with the exit code, the last lines and the way out', () => {
    const repo = makeRepo(PROJECTS.node!);
    try {
      const r = spawnSync(
        process.execPath,
        [
          join(process.cwd(), 'dist', 'runner.js'),
          'bake',
          '--repo',
          repo.dir,
          '--base',
          TEST_IMAGES.bookworm,
          '--install',
          'echo fetching; echo "gyp ERR! missing python3-dev" >&2; exit 7',
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 2, r.stderr);
      const errors = r.stderr.split('\n').filter((l) => l.startsWith('forge-runner:'));
      assert.equal(errors.length, 1, r.stderr);
      assert.match(errors[0]!, /install step .* failed \(exit 7\): .*gyp ERR! missing python3-dev.*--no-install/);
      assert.doesNotMatch(r.stderr, /internal error|    at /);
      assert.ok(!existsSync(join(repo.dir, '.forge', 'bake.json')), 'a failed bake must not be recorded');
    } finally {
      repo.cleanup();
    }
  });

  it('bake --from-container commits a configured scratch container', async () => {
    const repo = makeRepo({ 'README.md': 'x\n' });
    const scratch = await docker.createContainer({
      Image: TEST_IMAGES.busybox,
      Cmd: ['sh', '-c', 'echo configured > /marker'],
      Labels: { 'forge.test': 'scratch' },
    });
    try {
      await scratch.start();
      await scratch.wait();
      const { bakeFromContainer } = await import('../../../runner/src/images/bakeImage.js');
      const baked = await bakeFromContainer(docker, repo.dir, scratch.id);
      const r = await provider.run({ image: baked.image, cmd: 'cat /marker' });
      assert.equal(r.output, 'configured\n');
      await provider.drain();
      await docker
        .getImage(baked.image)
        .remove()
        .catch(() => undefined);
    } finally {
      await scratch.remove({ force: true });
      repo.cleanup();
    }
  });
});
