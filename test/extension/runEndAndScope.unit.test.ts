import assert from 'node:assert/strict';
import type { AttemptSnapshot, RepositoryCheck, RunSnapshot, RunSummary } from '../../runner/src/protocol/rpcFix.js';
import { ForgeState } from '../../extension/src/forgeState.js';
import { planPreflight } from '../../extension/src/flows/preflightPlan.js';
import { renderHealth } from '../../extension/src/healthMarkdown.js';
import { closestAttempt, describeRunEnd } from '../../extension/src/flows/runEnd.js';
import { attemptsScope, hiddenRunsMessage, repoInFolders } from '../../extension/src/workspaceScope.js';

const summary = (over: Partial<RunSummary> = {}): RunSummary => ({
  run_id: 'run-1',
  status: 'not_fixed',
  created_at: '',
  updated_at: '',
  repo: '/w/app',
  base_commit: 'abc',
  issue_title: 'x',
  test_cmd: 'npm test',
  provider: 'host',
  image: '',
  model: 'replay:x',
  attempts: 3,
  winner_attempt: null,
  review: null,
  error: null,
  environment: null,
  ending: null,
  ...over,
});
const attempt = (index: number, over: Partial<AttemptSnapshot> = {}): AttemptSnapshot => ({
  index,
  attempt_id: `a${index}`,
  temperature: 0,
  status: 'finished',
  turns: 2,
  tokens: 1,
  green: false,
  passed: 5,
  failed: 2,
  diff_size: 4,
  winner: false,
  error: null,
  agrees_with: [],
  rank: null,
  reason: null,
  could_not_run: null,
  ...over,
});
const snap = (run: Partial<RunSummary>, attempts: AttemptSnapshot[] = []): RunSnapshot => ({
  run: summary(run),
  attempts,
  cells: [],
  ranking: [],
});
const check = (over: Partial<RepositoryCheck> = {}): RepositoryCheck => ({
  repo: '/w/app',
  problems: [],
  untracked: { count: 0, sample: [] },
  test_cmd: 'npm test',
  install_cmd: 'npm ci',
  repository_files: [],
  ...over,
});

describe('extension: what a run end says and offers, the pre-flight, and the window scope', () => {
  it('a fixed run offers Review, Apply and Discard and names the winner', () => {
    const v = describeRunEnd(
      { status: 'fixed', error: null },
      snap({ status: 'fixed' }, [attempt(0), attempt(1, { winner: true, diff_size: 3, diff_lines: { added: 2, removed: 1 } })]),
    );
    assert.equal(v.severity, 'info');
    assert.match(v.message, /attempt 1 won \(\+2 −1 changed/);
    assert.deepEqual(
      v.actions.map((a) => a.action),
      ['review', 'apply', 'discard'],
    );
  });

  it('a broken environment says the cause and the fix in words and offers buttons that act on it', () => {
    const env = {
      cause: 'command_not_found' as const,
      detail: 'the test command failed: eslint: not found',
      fix: 'install the dependencies',
    };
    const v = describeRunEnd({ status: 'failed', error: 'x' }, snap({ status: 'failed', environment: env }));
    assert.equal(v.severity, 'error');
    assert.match(v.message, /could not run on the base commit.*eslint: not found\. Install the project's dependencies in your checkout/);
    assert.doesNotMatch(v.message, /--/, 'no CLI flag the editor cannot pass');
    assert.deepEqual(
      v.actions.map((a) => a.label),
      ['Install Dependencies…', 'Edit Test Command', 'Open Baseline Log'],
    );
    const timeout = describeRunEnd({ status: 'failed', error: 'x' }, snap({ environment: { ...env, cause: 'timeout' } }));
    assert.equal(timeout.actions[0]!.action, 'cellTimeoutSetting');
    const none = describeRunEnd({ status: 'failed', error: 'x' }, snap({ environment: { ...env, cause: 'no_tests' } }));
    assert.ok(!none.actions.some((a) => a.action === 'installDependencies'));
  });

  it('a red run names the closest attempt and offers the evidence', () => {
    const attempts = [
      attempt(0, { failed: 3 }),
      attempt(1, { failed: 1, diff_size: 9 }),
      attempt(2, { failed: 1, diff_size: 2 }),
      attempt(3, { status: 'failed', failed: null, passed: null }),
    ];
    assert.equal(closestAttempt(snap({}, attempts)), 2);
    const v = describeRunEnd({ status: 'not_fixed', error: null }, snap({}, attempts));
    assert.equal(v.severity, 'warning');
    assert.match(v.message, /none of the 4 attempts passed the tests\. Closest: attempt 2 \(1 failing\)/);
    assert.deepEqual(
      v.actions.map((a) => a.action),
      ['attemptDetails', 'attemptLog', 'editTestCommand', 'showAttempts'],
    );
    // The runner's ending, with each attempt's reason, is what the notification says; it names the run.
    const ending =
      'not fixed: no attempt passed the tests (attempt 0: "adds" still fails; attempt 1: its tests could not run: out of memory)';
    const said = describeRunEnd({ status: 'not_fixed', error: null }, snap({ issue_title: 'Sum is wrong', ending }, attempts));
    assert.equal(
      said.message,
      `Forge: not fixed "Sum is wrong": no attempt passed the tests (attempt 0: "adds" still fails; attempt 1: its tests could not run: out of memory).`,
    );
    // An attempt whose tests could not run is not the closest, whatever its counts.
    const crashed = [attempt(0, { failed: 3 }), attempt(1, { failed: 0, could_not_run: 'out of memory' })];
    assert.equal(closestAttempt(snap({}, crashed)), 0);
  });

  it('a fixed run already applied offers no Apply; an interrupted run says it was interrupted and offers Resume', () => {
    const applied = describeRunEnd({ status: 'fixed', error: null }, snap({ status: 'fixed', review: 'applied', issue_title: 'x' }, []));
    assert.deepEqual(
      applied.actions.map((a) => a.action),
      ['review'],
    );
    assert.match(applied.message, /applied to your working tree/);
    const interrupted = describeRunEnd({ status: 'interrupted', error: null }, snap({ status: 'interrupted' }, []));
    assert.match(interrupted.message, /interrupted/);
    assert.equal(interrupted.actions[0]!.action, 'resume');
  });

  it('a cancelled run offers Resume and Discard; any other end says the error and offers the log', () => {
    assert.deepEqual(
      describeRunEnd({ status: 'interrupted', error: 'cancelled' }, null).actions.map((a) => a.action),
      ['resume', 'discard'],
    );
    const failed = describeRunEnd({ status: 'failed', error: 'the model endpoint refused the key' }, null);
    assert.match(failed.message, /did not finish: the model endpoint refused the key/);
    assert.equal(failed.actions[0]!.action, 'showLog');
  });

  it('pre-flight: the model comes first, then the repository, the commit and the test command; tracked changes ask; untracked files are said', () => {
    assert.deepEqual(planPreflight('forge.model is empty: set it', check()).block?.actions, [
      { label: 'Open Settings', action: 'openModelSettings' },
    ]);
    const notRepo = planPreflight(
      null,
      check({ repo: null, problems: [{ code: 'not_a_repository', message: '/w/app is not inside a git repository', paths: [] }] }),
    );
    assert.equal(notRepo.block?.actions[0]!.action, 'initRepository');
    const noTests = planPreflight(null, check({ problems: [{ code: 'no_test_command', message: 'no test command detected', paths: [] }] }));
    assert.equal(noTests.block?.actions[0]!.action, 'editTestCommand');
    const dirty = planPreflight(
      null,
      check({
        problems: [{ code: 'tracked_changes', message: '/w/app has uncommitted changes to 2 tracked path(s)', paths: ['a.js', 'b.js'] }],
        untracked: { count: 2, sample: ['.forgeinclude', '.vscode/settings.json'] },
      }),
    );
    assert.equal(dirty.block, null);
    assert.equal(dirty.dirty?.detail, 'a.js\nb.js');
    assert.match(dirty.untracked ?? '', /^2 untracked file\(s\) are not part of the attempts/);
    assert.deepEqual(planPreflight(null, check()), { block: null, dirty: null, untracked: null, repositoryFiles: null });
  });

  it("pre-flight: the repository's own unconfirmed files are asked about, with what they ask for; confirmed or refused ones are not", () => {
    const sha = 'a'.repeat(64);
    const asking = planPreflight(
      null,
      check({
        repository_files: [
          { file: '.forgeinclude', state: 'read', sha256: sha, summary: 'copies "config/local.json" into every attempt', confirmed: false },
          {
            file: '.forge/config.json',
            state: 'read',
            sha256: 'b'.repeat(64),
            summary: 'shares "vendor" with every cell',
            confirmed: true,
          },
        ],
      }),
    );
    assert.match(asking.repositoryFiles?.message ?? '', /own \.forgeinclude asks Forge .* not from you/);
    assert.match(asking.repositoryFiles?.detail ?? '', /config\/local\.json/);
    assert.deepEqual(asking.repositoryFiles?.files, [{ file: '.forgeinclude', sha256: sha }]);
    const refused = planPreflight(
      null,
      check({
        repository_files: [
          { file: '.forgeinclude', state: 'refused', sha256: null, summary: '.forgeinclude is a symbolic link', confirmed: false },
        ],
      }),
    );
    assert.equal(refused.repositoryFiles, null);
  });

  it('scope: a run belongs to the window when its repository is open, holds an open folder, or lies in one', () => {
    assert.ok(repoInFolders('/w/app', ['/w/app/']));
    assert.ok(repoInFolders('/w/app', ['/w/app/packages/ui']));
    assert.ok(repoInFolders('/w/app/sub', ['/w']));
    assert.ok(!repoInFolders('/w/app', ['/w/app2']));
    assert.ok(!repoInFolders('/w/app', []));
    const state = new ForgeState();
    state.setRuns([
      summary({ run_id: 'other', repo: '/w/other', status: 'fixed', review: 'pending' }),
      summary({ run_id: 'mine', repo: '/w/app', status: 'fixed', review: 'pending' }),
    ]);
    state.setScope(['/w/app']);
    assert.deepEqual(
      state.visibleRuns.map((r) => r.run_id),
      ['mine'],
    );
    assert.equal(state.reviewableRun?.run_id, 'mine', "the palette's Review/Apply never picks another repository's run");
    assert.equal(state.currentRun?.run_id, 'mine');
    assert.match(hiddenRunsMessage(state.hiddenRuns, state.showAll) ?? '', /^1 run of repositories not open in this window is hidden/);
    state.setScope(['/w/app'], true);
    assert.equal(state.visibleRuns.length, 2);
    assert.equal(hiddenRunsMessage(state.hiddenRuns, state.showAll), undefined);
    state.setScope(['/w/elsewhere'], false);
    assert.equal(state.reviewableRun, undefined);
  });

  it('scope: with no run of this window, the view stays empty (its welcome keeps the Fix Issue button) and says others are hidden', () => {
    // No run in scope, runs of other repositories: no message (it would replace the welcome), the hidden-runs welcome.
    assert.deepEqual(attemptsScope(0, 10, false), { message: undefined, hiddenOnly: true });
    // Nothing at all: the plain welcome.
    assert.deepEqual(attemptsScope(0, 0, false), { message: undefined, hiddenOnly: false });
    // Showing all repositories: nothing is hidden.
    assert.deepEqual(attemptsScope(0, 3, true), { message: undefined, hiddenOnly: false });
    // Runs listed: the line above them says how many others are left out.
    const listed = attemptsScope(2, 1, false);
    assert.equal(listed.hiddenOnly, false);
    assert.match(listed.message ?? '', /^1 run of repositories not open in this window is hidden/);
  });
});

describe('extension: cell health rendered', () => {
  it('puts the provider in use first, isolation as a table, and escapes what the runner says', () => {
    const iso = {
      mechanism: 'bubblewrap',
      degraded: false,
      namespaces: ['mount', 'pid'],
      net: 'none' as const,
      filesystem: 'read-only root | private /tmp',
      user: 'uid 65532',
      masked_paths: ['/root'],
      cgroup: { version: 'v1' as const, memory_max_bytes: 1024, pids_max: 512, cpu_quota_cores: null, reason: null },
      rlimits: { cpu_s: 300, data_bytes: null, nproc: null, fsize_bytes: null, nofile: 1024 },
      warnings: ['<script>x</script>'],
    };
    const md = renderHealth(
      {
        generated_at: 'now',
        default_provider: 'host',
        providers: [
          { provider: 'host', available: true, reason: 'bubblewrap sandbox', isolation: iso, details: { state_dir: '/s' } },
          { provider: 'docker', available: false, reason: 'no Docker Engine answers', isolation: null, details: {} },
        ],
      },
      0,
      'docker',
    );
    assert.ok(md.indexOf('## docker (in use): ✗ unavailable') < md.indexOf('## host: ✓ available'), md);
    assert.match(md, /\| Filesystem \| read-only root \\\| private \/tmp \|/);
    assert.match(md, /\| cgroup \| v1: memory max bytes 1024, pids max 512 \|/);
    assert.match(md, /- &lt;script&gt;x&lt;\/script&gt;/);
    assert.doesNotMatch(md, /<script>/);
    assert.doesNotMatch(md, /\{"mechanism"/, 'no one-line JSON');
  });
});
