import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type CorpusEntry, type CorpusOutcome, corpusEntries, prepareCorpusRepo, runCorpusFix } from './corpusRepos.js';
import { requireQemu } from '../helpers/qemu.js';
import { dockerUnavailable, TEST_IMAGES } from '../helpers/docker.js';
import { requireFeature } from '../helpers/requirement.js';
import { swarmUnavailable, TEST_SWARM_REGISTRY } from '../helpers/swarm.js';

/**
 * Every corpus repository is fixed with default flags after its ordinary install step: the
 * regression-causing attempt loses with its regression named, the correct one wins.
 */
/** A test failing before and after is named so on the winner, and a tool's cache is named generated, not patched. */
function checkPreexistingAndGenerated(entry: CorpusEntry, out: CorpusOutcome): void {
  const report = out.report!;
  const won = report.attempts.find((a) => out.winner === a.attempt_id)!;
  if (entry.failing_before) {
    assert.deepEqual(report.winner?.verdict.failing_before, [entry.failing_before], JSON.stringify(report.winner?.verdict));
    assert.match(report.ending ?? '', /failing before and after, not caused by this change/);
  }
  if (entry.generated) {
    assert.ok(won.generated.includes(entry.generated), `the winner names no generated ${entry.generated}: ${JSON.stringify(won)}`);
    assert.ok(won.diff_size <= 2, `the winner's patch has ${won.diff_size} changed lines: more than its fix`);
  }
}

describe('corpus: realistic repositories fixed with default flags', function () {
  this.timeout(900_000);

  for (const provider of ['host', 'docker'] as const) {
    describe(`${provider} cells`, () => {
      before(async function () {
        if (provider === 'docker') {
          const why = await dockerUnavailable(TEST_IMAGES.bookworm);
          requireFeature(this, why === null, why ?? '');
        }
      });

      // An entry names the providers whose cells have its toolchain (the docker test image has no JDK).
      for (const entry of corpusEntries().filter((e) => !e.providers || e.providers.includes(provider))) {
        it(`${entry.name}: ${entry.description}`, function () {
          for (const program of entry.needs ?? []) {
            const found = spawnSync('/bin/sh', ['-c', `command -v ${program}`]).status === 0;
            requireFeature(this, found, `${program} is not installed (.ci/run installs it)`);
          }
          const repo = prepareCorpusRepo(entry);
          try {
            const out = runCorpusFix(entry, repo, provider, provider === 'docker' ? TEST_IMAGES.bookworm : undefined);
            assert.equal(out.exitCode, 0, out.stderr.slice(-3000));
            assert.equal(out.fixed, true);
            assert.ok(out.winner?.endsWith(`-${entry.winner}`), `winner ${out.winner}`);
            assert.ok(
              out.regressions.includes(entry.regression),
              `regression "${entry.regression}" not named; named: ${JSON.stringify(out.regressions)}; attempts: ${JSON.stringify(
                out.report?.attempts.map(
                  (a) =>
                    a.verdict && {
                      green: a.verdict.green,
                      failing: a.verdict.failing,
                      unknown: a.verdict.regressions_unknown,
                      crash: a.verdict.could_not_run,
                    },
                ),
              )}\n${out.stderr.slice(-2000)}`,
            );
            assert.ok(out.report!.dependencies.length > 0 || !entry.setup, 'installed dependencies were not detected');
            checkPreexistingAndGenerated(entry, out);
          } finally {
            repo.cleanup();
          }
        });
      }
    });
  }

  describe('qemu cells: a bare pytest checkout (a test failing before and after, its cache, multiprocessing) is fixed in micro-VMs', () => {
    it('py-pytest-preexisting', function () {
      requireQemu(this);
      const entry = corpusEntries().find((e) => e.name === 'py-pytest-preexisting')!;
      const repo = prepareCorpusRepo(entry);
      try {
        const out = runCorpusFix(entry, repo, 'qemu');
        assert.equal(out.exitCode, 0, out.stderr.slice(-3000));
        assert.equal(out.report!.provider, 'qemu');
        assert.ok(out.winner?.endsWith(`-${entry.winner}`), `winner ${out.winner}`);
        assert.ok(out.regressions.includes(entry.regression), JSON.stringify(out.regressions));
        checkPreexistingAndGenerated(entry, out);
      } finally {
        repo.cleanup();
      }
    });
  });

  describe('swarm cells: the installed dependencies travel to the nodes as a layer', () => {
    it('js-jest: an npm package with jest installed in the checkout is fixed on the 3-node cluster', async function () {
      const why = await swarmUnavailable();
      requireFeature(this, why === null, why ?? '');
      const entry = corpusEntries().find((e) => e.name === 'js-jest')!;
      const repo = prepareCorpusRepo(entry);
      try {
        const out = runCorpusFix(entry, repo, 'swarm', TEST_IMAGES.bookworm, ['--registry', TEST_SWARM_REGISTRY]);
        assert.equal(out.exitCode, 0, out.stderr.slice(-3000));
        assert.equal(out.report!.provider, 'swarm');
        assert.equal(out.fixed, true);
        assert.ok(out.winner?.endsWith(`-${entry.winner}`), `winner ${out.winner}`);
        assert.ok(out.regressions.includes(entry.regression), JSON.stringify(out.regressions));
        assert.ok(out.report!.dependencies.length > 0, 'installed dependencies were not detected');
      } finally {
        repo.cleanup();
      }
    });
  });

  describe('nothing installed in the checkout: --install-cmd runs once for the run, with only the registry reachable', () => {
    // Swarm: the install cell reaches the registry through the relay on its own overlay, and
    // its node_modules (7,000 files) comes back from the node to travel to the others as a layer.
    for (const provider of ['host', 'docker', 'swarm'] as const) {
      it(`js-tape-nyc on ${provider} cells: one install cell, its node_modules shared with every attempt`, async function () {
        if (provider === 'docker') {
          const why = await dockerUnavailable(TEST_IMAGES.bookworm);
          requireFeature(this, why === null, why ?? '');
        }
        if (provider === 'swarm') {
          const why = await swarmUnavailable(2);
          requireFeature(this, why === null, why ?? '');
        }
        const entry = corpusEntries().find((e) => e.name === 'js-tape-nyc')!;
        const repo = prepareCorpusRepo(entry, { install: false });
        try {
          const out = runCorpusFix(entry, repo, provider, provider === 'host' ? undefined : TEST_IMAGES.bookworm, [
            '--install-cmd',
            'npm ci --no-audit --no-fund',
            ...(provider === 'swarm' ? ['--registry', TEST_SWARM_REGISTRY] : []),
          ]);
          assert.equal(out.exitCode, 0, out.stderr.slice(-3000));
          assert.match(out.stderr, /install: npm ci --no-audit --no-fund \(once for the run; network: registry\.npmjs\.org/);
          assert.equal((out.stderr.match(/^forge: install:/gm) ?? []).length, 1);
          assert.ok(out.winner?.endsWith('-a1'));
          assert.match(out.report!.dependencies.map((d) => d.shared).join('\n'), /^node_modules from the install, \d+ packages/m);
          assert.equal(existsSync(join(repo.dir, 'node_modules')), false, 'the install wrote into the checkout');
        } finally {
          repo.cleanup();
        }
      });
    }
  });
});
