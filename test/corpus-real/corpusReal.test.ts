import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { checkRealProject, realProjects } from './realProjects.js';

/**
 * The CI subset of the real-world corpus: published projects fetched by exact version (a
 * project that cannot be fetched fails here, it is never skipped), installed as their users
 * install them, fixed with default flags. `npm run corpus:real` runs the whole set.
 */
describe('real-world corpus (CI subset): published projects fixed with default flags', function () {
  this.timeout(600_000);
  const chosen = realProjects().filter((p) => p.ci);

  it('the subset covers npm, pnpm, yarn and go projects', () => {
    assert.deepEqual(
      [...new Set(chosen.map((p) => p.packageManager))].sort(),
      [...new Set(realProjects().map((p) => p.packageManager))].sort(),
    );
  });

  for (const p of chosen) {
    it(`${p.name}: ${p.source.package}@${p.source.version} (${p.packageManager}, ${p.framework}): the right winner, "${p.regression}" named, the checkout untouched`, function () {
      for (const program of [...p.needs, p.packageManager === 'python' ? 'python3' : p.packageManager])
        assert.equal(spawnSync('/bin/sh', ['-c', `command -v ${program}`]).status, 0, `${program} is not installed (.ci/run installs it)`);
      const r = checkRealProject(p);
      assert.equal(r.problem, null, r.problem ?? '');
      assert.ok(r.fixedRightWinner && r.regressionNamed && r.untouched);
    });
  }
});
