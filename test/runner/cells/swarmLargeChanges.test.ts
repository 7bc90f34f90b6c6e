import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { SwarmCellProvider } from '../../../runner/src/cells/providers/swarmCellProvider.js';
import { SWARM_INPUT_REPOSITORY } from '../../../runner/src/cells/swarm/swarmServiceSpec.js';
import { TEST_IMAGES } from '../../helpers/docker.js';
import { makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../../helpers/swarm.js';

describe("swarm cells: an attempt's changes larger than a Swarm config (500 KB)", function () {
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
});
