import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { openStore } from '../../../runner/src/store/openStore.js';
import { RunStore } from '../../../runner/src/store/runStore.js';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { fixWith, type ToolCall } from '../../helpers/fixCli.js';
import { requireFeature } from '../../helpers/requirement.js';

/** A Go module whose Add subtracts: its test fails on the base commit. */
const GO_REPO = {
  'go.mod': 'module example.com/warm\n\ngo 1.18\n',
  'calc.go':
    'package warm\n\nimport "fmt"\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Show(n int) string { return fmt.Sprint(n) }\n',
  'calc_test.go':
    'package warm\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("Add(2, 3) != 5")\n\t}\n}\n\nfunc TestShow(t *testing.T) {\n\tif Show(7) != "7" {\n\t\tt.Fatal("Show")\n\t}\n}\n',
};
const FIX: ToolCall = { name: 'edit_file', arguments: { path: 'calc.go', old_string: 'return a - b', new_string: 'return a + b' } };
const GO_TESTS = ['--test-cmd', 'go test ./...'];

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

function requireGoAndRoot(ctx: Mocha.Context): void {
  requireFeature(ctx, spawnSync('go', ['version']).status === 0, 'go is not installed');
  requireFeature(ctx, (process.getuid?.() ?? 0) === 0, 'the private writable layer needs a root runner');
}

describe('warm caches from the baseline: a cell can poison only its own layer (issue 29)', function () {
  this.timeout(300_000);

  for (const provider of ['host', 'docker'] as const) {
    it(`${provider} cells: later cells start from the baseline's Go build cache; one that rewrites every cached object changes no other cell's result`, async function () {
      requireGoAndRoot(this);
      if (provider === 'docker') {
        const why = await dockerUnavailable(TEST_IMAGES.bookworm);
        requireFeature(this, why === null, why ?? '');
      }
      const where = ['--provider', provider, ...(provider === 'docker' ? ['--image', TEST_IMAGES.bookworm] : [])];
      // Cell A poisons its view of the cache; cell B (the tests, a cell of its own) must not see it.
      const turns: ToolCall[][] = [
        [FIX],
        [{ name: 'run_command', arguments: { command: POISON } }],
        [{ name: 'run_tests', arguments: {} }],
      ];
      const r = fixWith(GO_REPO, turns, [...GO_TESTS, ...where]);
      assert.equal(r.status, 0, r.stderr);
      const report = r.report!;
      assert.match(r.stderr, /baseline: go-build-cache kept for the run's later cells/);
      assert.ok(report.dependencies.some((d) => d.kind === 'go-build-cache' && d.target === '/tmp/forge-deps/go-build'));
      const store = new RunStore(openStore(join(process.env.FORGE_STATE_DIR!, 'forge.db')));
      const cells = store.cells(report.run_id, 0);
      const said = cells.find((c) => c.purpose === 'run_command')?.log ?? '';
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
      assert.doesNotMatch(r.stderr, /build cache could not be removed/);
      // --no-warm-caches: every cell compiles afresh.
      const cold = fixWith(GO_REPO, turns, [...GO_TESTS, ...where, '--no-warm-caches']);
      assert.equal(cold.status, 0, cold.stderr);
      assert.doesNotMatch(cold.stderr, /go-build-cache kept/);
      const coldSaid = store.cells(cold.report!.run_id, 0).find((c) => c.purpose === 'run_command')?.log ?? '';
      assert.doesNotMatch(coldSaid, /cache=\/tmp\/forge-deps\/go-build/);
    });
  }

  // Go tracks only the files a test opens itself: a script it runs is not among them. In a
  // package of its own, which the fix does not touch, so only a cached result would pass it.
  const SCRIPT_TEST_REPO = {
    ...GO_REPO,
    'b/check.sh': 'exit 0\n',
    'b/script_test.go':
      'package b\n\nimport (\n\t"os/exec"\n\t"testing"\n)\n\nfunc TestCheckScript(t *testing.T) {\n\tif err := exec.Command("sh", "check.sh").Run(); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n',
  };
  for (const [what, testCmd, rerun] of [
    ['GOFLAGS=-count=1 keeps results out of the cache', 'go test ./...', false],
    // The command's own GOFLAGS replaces ours: the baseline keeps results, the run seeing one is run again without the cache.
    [
      'a command that sets GOFLAGS itself: the run that took a cached result runs again without the cache',
      'GOFLAGS=-mod=mod go test -v ./...',
      true,
    ],
  ] as const) {
    it(`no test result comes from the cache (${what}): a change to a script a test runs is a regression (red team)`, function () {
      requireGoAndRoot(this);
      const r = fixWith(
        SCRIPT_TEST_REPO,
        [[FIX], [{ name: 'write_file', arguments: { path: 'b/check.sh', content: 'exit 1\n' } }]],
        ['--test-cmd', testCmd],
      );
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /go-build-cache kept/);
      (rerun ? assert.match : assert.doesNotMatch)(r.stderr, /go test reported results from the run's build cache .*run again without it/);
      assert.equal(r.report!.status, 'not_fixed');
      assert.deepEqual(r.report!.attempts[0]!.verdict!.regressions, ['TestCheckScript']);
    });
  }

  it('a tree deeper than PATH_MAX the baseline left in the cache goes with the run (red team)', function () {
    requireGoAndRoot(this);
    const r = fixWith(
      {
        ...GO_REPO,
        'deep.sh':
          'mkdir -p "$GOCACHE" && cd "$GOCACHE" && for i in $(seq 25); do d=$(printf "d%.0s" $(seq 250)); mkdir "$d" && cd "$d"; done\n',
      },
      [[FIX]],
      ['--test-cmd', 'sh deep.sh; go test ./...'],
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.report!.status, 'fixed');
    assert.match(r.stderr, /go-build-cache kept/);
    assert.doesNotMatch(r.stderr, /build cache could not be removed/);
  });
});
