import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { SwarmCellProvider } from '../../../runner/src/cells/providers/swarmCellProvider.js';
import { SWARM_DEPS_REPOSITORY, SWARM_INPUT_REPOSITORY } from '../../../runner/src/cells/swarm/swarmServiceSpec.js';
import { TEST_IMAGES } from '../../helpers/docker.js';
import { makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../../helpers/swarm.js';

describe("swarm cells: what travels besides the base tree (changes past a Swarm config's 500 KB, installed dependencies)", function () {
  this.timeout(180_000);
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  let provider: SwarmCellProvider;

  before(async function () {
    const why = await swarmUnavailable();
    requireFeature(this, why === null, why ?? '');
    provider = new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY });
  });
  after(async () => provider?.drain());

  it('travel as an image layer: the cell sees them byte for byte, its own changes come back, and the image is gone afterwards', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      // Incompressible, well past the config limit.
      const big = randomBytes(900 * 1024).toString('base64');
      writeFileSync(join(repo.dir, 'big.txt'), big);
      const r = await provider.run({
        image: TEST_IMAGES.busybox,
        worktree: repo.dir,
        cmd: 'md5sum big.txt; echo changed > a.txt',
      });
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      const { createHash } = await import('node:crypto');
      assert.match(r.output, new RegExp(`^${createHash('md5').update(big).digest('hex')}  big.txt`, 'm'));
      assert.equal(readFileSync(join(repo.dir, 'a.txt'), 'utf8'), 'changed\n');
      assert.match(r.diff?.patch ?? '', /\+changed/);
      // Neither the manager's engine nor the registry keeps it once the cell is cleaned up.
      await provider.drain();
      const images = await docker.listImages();
      assert.deepEqual(
        images.flatMap((i) => i.RepoTags ?? []).filter((t) => t.includes(SWARM_INPUT_REPOSITORY)),
        [],
      );
      const tags = (await (await fetch(`http://${TEST_SWARM_REGISTRY}/v2/${SWARM_INPUT_REPOSITORY}/tags/list`)).json()) as {
        tags?: string[] | null;
      };
      assert.deepEqual(tags.tags ?? [], []);
    } finally {
      repo.cleanup();
    }
  });

  it('installed dependencies in the checkout travel as one layer, reused while they do not change; setuid bits and host files stay behind', async () => {
    const repo = makeRepo({ '.gitignore': 'node_modules/\n', 'test.sh': 'cat node_modules/dep/index.js\n' });
    // As in a fix run: the installed tree is the checkout's, the cell's worktree another one.
    const checkout = mkdtempSync(join('/var/lib', 'forge-swarm-deps-'));
    try {
      const nm = join(checkout, 'node_modules');
      mkdirSync(join(nm, 'dep'), { recursive: true });
      writeFileSync(join(nm, 'dep', 'index.js'), 'module.exports = 42;\n');
      writeFileSync(join(nm, 'dep', 'tool'), '#!/bin/sh\necho tool\n', { mode: 0o4755 });
      chmodSync(join(nm, 'dep', 'tool'), 0o4755);
      symlinkSync('../dep/tool', join(nm, 'tool-link'));
      symlinkSync('/etc/shadow', join(nm, 'shadow-link'));
      const spec = (cmd: string) => ({
        image: TEST_IMAGES.busybox,
        worktree: repo.dir,
        mount_at: repo.dir,
        shared_deps: [{ source: nm, target: join(repo.dir, 'node_modules') }],
        cmd,
      });
      const tags = async () =>
        ((await (await fetch(`http://${TEST_SWARM_REGISTRY}/v2/${SWARM_DEPS_REPOSITORY}/tags/list`)).json()) as { tags?: string[] | null })
          .tags ?? [];
      const earlier = new Set(await tags());
      const r = await provider.run(
        spec(
          'sh test.sh; stat -c "%a %U" node_modules/dep/tool; readlink node_modules/tool-link; cat node_modules/shadow-link 2>&1 | head -c 40; echo; echo x > node_modules/dep/written 2>/dev/null && echo wrote; mkdir -p node_modules/.cache && echo c > node_modules/.cache/f && echo cache-ok; stat -c "tmp %a" /tmp; touch top-ok && echo top-ok',
        ),
      );
      assert.equal(r.exit_code, 0, `${r.output} ${r.isolation.warnings.join('; ')}`);
      assert.match(r.output, /module\.exports = 42;/);
      assert.match(r.output, /^755 /m, 'no setuid bit travels');
      assert.match(r.output, /^\.\.\/dep\/tool$/m, 'a link stays a link');
      assert.doesNotMatch(r.output, /root:/, "the task's own /etc/shadow at most, never the runner's");
      assert.doesNotMatch(r.output, /wrote/, "the installed content is read-only to the cell, as under the other providers' layers");
      assert.equal(existsSync(join(nm, 'dep', 'written')), false, 'writes stay in the task');
      assert.match(r.output, /cache-ok/, 'a tool may add its cache');
      assert.equal(existsSync(join(nm, '.cache')), false);
      // The layer leaves what lies above its targets alone (here the worktree, under /tmp).
      assert.match(r.output, /^tmp 1777$/m);
      assert.match(r.output, /top-ok/, "the worktree top is still the cell user's");
      assert.deepEqual(
        r.isolation.warnings.filter((w) => /shared dependenc/.test(w)),
        [],
      );
      const again = await provider.run(spec('sh test.sh'));
      assert.equal(again.exit_code, 0, again.output);
      const made = (await tags()).filter((t) => !earlier.has(t));
      assert.equal(made.length, 1, `one layer for both cells: ${made.join(', ')}`);
      writeFileSync(join(nm, 'dep', 'index.js'), 'module.exports = 43;\n');
      // A new provider (a new run) walks the tree again.
      const next = new SwarmCellProvider({ registry: TEST_SWARM_REGISTRY });
      const changed = await next.run(spec('sh test.sh')).finally(() => next.drain());
      assert.match(changed.output, /module\.exports = 43;/);
      assert.equal((await tags()).filter((t) => !earlier.has(t)).length, 2, 'a changed tree is a new layer');
      assert.equal(existsSync(join(repo.dir, 'node_modules')), false, 'nothing of the layer came back into the worktree');
    } finally {
      repo.cleanup();
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});
