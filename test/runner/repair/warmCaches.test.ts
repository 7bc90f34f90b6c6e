import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FixReportSchema } from '../../../runner/src/protocol/fixReport.js';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';
import { requireFeature } from '../../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

/** A Go module whose Add subtracts: its test fails on the base commit. */
const GO_REPO = {
  'go.mod': 'module example.com/warm\n\ngo 1.18\n',
  'calc.go':
    'package warm\n\nimport "fmt"\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Show(n int) string { return fmt.Sprint(n) }\n',
  'calc_test.go':
    'package warm\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("Add(2, 3) != 5")\n\t}\n}\n\nfunc TestShow(t *testing.T) {\n\tif Show(7) != "7" {\n\t\tt.Fatal("Show")\n\t}\n}\n',
};

/**
 * Poisons every compiled object the cell's Go build cache holds (same size, zeros: Go checks an
 * output's size, not its content), then shows that a build using them fails.
 */
const POISON = [
  'echo "cache=$GOCACHE entries=$(find "$GOCACHE" -type f -name "*-d" -size +0 | wc -l)"',
  'find "$GOCACHE" -type f -name "*-d" -exec sh -c \'for f; do s=$(stat -c %s "$f"); head -c "$s" /dev/zero > "$f"; done\' _ {} +',
  // Objects with any byte that is not a zero: none is left.
  'echo "intact=$(find "$GOCACHE" -type f -name "*-d" -size +0 -exec sh -c \'for f; do tr -d "\\000" < "$f" | head -c1 | grep -q . && echo x; done\' _ {} + | wc -l)"',
  'go test ./... > /dev/null 2>&1; echo "poisoned build exit=$?"',
].join('; ');

function fixGo(repo: string, script: string, testCmd = 'go test ./...', extra: string[] = []) {
  const r = spawnSync(
    process.execPath,
    [
      RUNNER,
      'fix',
      '--repo',
      repo,
      '--json',
      '--issue-text',
      'Add subtracts',
      '--test-cmd',
      testCmd,
      '--model',
      `replay:${script}`,
      '--attempts',
      '1',
      '--provider',
      'host',
      ...extra,
    ],
    { encoding: 'utf8' },
  );
  return { status: r.status, stderr: r.stderr, report: r.stdout ? FixReportSchema.parse(JSON.parse(r.stdout)) : null };
}

describe('warm caches from the baseline: a cell can poison only its own layer (issue 29)', function () {
  this.timeout(300_000);

  it('no test result comes from the cache: a change to a script a test runs is a regression (red team)', function () {
    requireFeature(this, spawnSync('go', ['version']).status === 0, 'go is not installed');
    requireFeature(this, (process.getuid?.() ?? 0) === 0, 'the private writable layer needs a root runner');
    // Go tracks only the files a test opens itself: a script it runs is not among them.
    // Go tracks only the files a test opens itself: a script it runs is not among them. In a
    // package of its own, which the fix does not touch, so only a cached result would pass it.
    const repo = makeRepo({ ...GO_REPO });
    mkdirSync(join(repo.dir, 'b'));
    writeFileSync(join(repo.dir, 'b', 'check.sh'), 'exit 0\n');
    writeFileSync(
      join(repo.dir, 'b', 'script_test.go'),
      'package b\n\nimport (\n\t"os/exec"\n\t"testing"\n)\n\nfunc TestCheckScript(t *testing.T) {\n\tif err := exec.Command("sh", "check.sh").Run(); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n',
    );
    git(repo.dir, 'add', '-A');
    git(repo.dir, 'commit', '-q', '-m', 'b');
    const script = join(repo.dir, '..', `results-${Date.now()}.json`);
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          [
            { tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.go', old_string: 'return a - b', new_string: 'return a + b' } }] },
            { tool_calls: [{ name: 'write_file', arguments: { path: 'b/check.sh', content: 'exit 1\n' } }] },
            { tool_calls: [{ name: 'finish', arguments: {} }] },
          ],
        ],
      }),
    );
    try {
      const r = fixGo(repo.dir, script);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /go-build-cache kept/);
      assert.equal(r.report!.status, 'not_fixed');
      assert.deepEqual(r.report!.attempts[0]!.verdict!.regressions, ['TestCheckScript']);
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  it('a tree deeper than PATH_MAX the baseline left in the cache goes with the run (red team)', function () {
    requireFeature(this, spawnSync('go', ['version']).status === 0, 'go is not installed');
    requireFeature(this, (process.getuid?.() ?? 0) === 0, 'the private writable layer needs a root runner');
    const repo = makeRepo({
      ...GO_REPO,
      'deep.sh':
        'mkdir -p "$GOCACHE" && cd "$GOCACHE" && for i in $(seq 25); do d=$(printf "d%.0s" $(seq 250)); mkdir "$d" && cd "$d"; done\n',
    });
    const script = join(repo.dir, '..', `deep-${Date.now()}.json`);
    writeFileSync(
      script,
      JSON.stringify({
        version: 1,
        attempts: [
          [
            { tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.go', old_string: 'return a - b', new_string: 'return a + b' } }] },
            { tool_calls: [{ name: 'finish', arguments: {} }] },
          ],
        ],
      }),
    );
    try {
      const r = fixGo(repo.dir, script, 'sh deep.sh; go test ./...');
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.report!.status, 'fixed');
      const forgeCells = join(repo.dir, '.git', 'forge-cells');
      assert.deepEqual(existsSync(forgeCells) ? readdirSync(forgeCells).filter((e) => e.endsWith('-build-cache')) : [], []);
    } finally {
      rmSync(script, { force: true });
      repo.cleanup();
    }
  });

  for (const provider of ['host', 'docker'] as const) {
    it(`${provider} cells: later cells start from the baseline's Go build cache; one that rewrites every cached object changes no other cell's result`, async function () {
      requireFeature(this, spawnSync('go', ['version']).status === 0, 'go is not installed');
      if (provider === 'docker') {
        const why = await dockerUnavailable(TEST_IMAGES.bookworm);
        requireFeature(this, why === null, why ?? '');
      }
      requireFeature(this, (process.getuid?.() ?? 0) === 0, 'the private writable layer needs a root runner');
      const repo = makeRepo(GO_REPO);
      const script = join(repo.dir, '..', `warm-${Date.now()}.json`);
      const fixCall = {
        tool_calls: [{ name: 'edit_file', arguments: { path: 'calc.go', old_string: 'return a - b', new_string: 'return a + b' } }],
      };
      writeFileSync(
        script,
        JSON.stringify({
          version: 1,
          attempts: [
            [
              fixCall,
              // Cell A poisons its view of the cache; cell B (the tests, a cell of its own) must not see it.
              { tool_calls: [{ name: 'run_command', arguments: { command: POISON } }] },
              { tool_calls: [{ name: 'run_tests', arguments: {} }] },
              { tool_calls: [{ name: 'finish', arguments: {} }] },
            ],
          ],
        }),
      );
      try {
        const r = spawnSync(
          process.execPath,
          [
            RUNNER,
            'fix',
            '--repo',
            repo.dir,
            '--json',
            '--issue-text',
            'Add subtracts',
            '--test-cmd',
            'go test ./...',
            '--model',
            `replay:${script}`,
            '--attempts',
            '1',
            '--provider',
            provider,
            ...(provider === 'docker' ? ['--image', TEST_IMAGES.bookworm] : []),
          ],
          { encoding: 'utf8' },
        );
        assert.equal(r.status, 0, r.stderr);
        const report = FixReportSchema.parse(JSON.parse(r.stdout));
        assert.match(r.stderr, /baseline: go-build-cache kept for the run's later cells/);
        assert.ok(report.dependencies.some((d) => d.kind === 'go-build-cache' && d.target === '/tmp/forge-deps/go-build'));
        const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
        const cells = store.cells(report.run_id, 0);
        const poison = cells.find((c) => c.purpose === 'run_command')!;
        const said = poison.log ?? '';
        // The cell started warm: the baseline's compiled packages were there.
        const entries = Number(/cache=\/tmp\/forge-deps\/go-build entries=(\d+)/.exec(said)?.[1]);
        assert.ok(entries > 10, said);
        assert.match(said, /intact=0\b/, `every object was rewritten in its view: ${said}`);
        assert.match(said, /poisoned build exit=[1-9]/, 'a build that uses the poisoned objects fails');
        // Its next cell, the ground truth and the verdict all pass: the poison stayed in that cell's layer.
        const tests = cells.find((c) => c.purpose === 'run_tests')!;
        assert.equal(tests.exit_code, 0, tests.log ?? '');
        assert.equal(report.status, 'fixed');
        assert.equal(report.ground_truth?.verdict?.green, true);
        // The run's cache went with the run.
        const forgeCells = join(repo.dir, '.git', 'forge-cells');
        assert.deepEqual(existsSync(forgeCells) ? readdirSync(forgeCells).filter((e) => e.endsWith('-build-cache')) : [], []);
        // --no-warm-caches: every cell compiles afresh.
        const cold = spawnSync(
          process.execPath,
          [
            RUNNER,
            'fix',
            '--repo',
            repo.dir,
            '--json',
            '--issue-text',
            'Add subtracts',
            '--test-cmd',
            'go test ./...',
            '--model',
            `replay:${script}`,
            '--attempts',
            '1',
            '--provider',
            provider,
            ...(provider === 'docker' ? ['--image', TEST_IMAGES.bookworm] : []),
            '--no-warm-caches',
          ],
          { encoding: 'utf8' },
        );
        assert.equal(cold.status, 0, cold.stderr);
        assert.doesNotMatch(cold.stderr, /go-build-cache kept/);
        const coldReport = FixReportSchema.parse(JSON.parse(cold.stdout));
        const coldSaid = store.cells(coldReport.run_id, 0).find((c) => c.purpose === 'run_command')?.log ?? '';
        assert.doesNotMatch(coldSaid, /cache=\/tmp\/forge-deps\/go-build/);
      } finally {
        rmSync(script, { force: true });
        repo.cleanup();
      }
    });
  }
});
