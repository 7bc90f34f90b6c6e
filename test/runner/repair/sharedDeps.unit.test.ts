import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeSharedDep, detectSharedDeps } from '../../../runner/src/repair/dependencies/detectSharedDeps.js';
import { readRepositoryFiles } from '../../../runner/src/repair/trust/repositoryFiles.js';
import { planCellMounts, refuseMountPlan, refuseSharedSource } from '../../../runner/src/cells/cellMounts.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';

function checkout(files: Record<string, string>): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'forge-deps-'));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

describe('shared dependencies: detection', () => {
  it('finds node_modules of the root and of workspace packages, and virtualenvs, with their targets in the repository path', () => {
    const c = checkout({
      'package.json': '{"workspaces":["packages/*"]}',
      'node_modules/tape/package.json': '{}',
      'node_modules/@scope/a/package.json': '{}',
      'node_modules/@scope/b/package.json': '{}',
      'node_modules/.bin/tape': '',
      'packages/core/node_modules/vitest/package.json': '{}',
      'packages/core/node_modules/vitest/node_modules/x/package.json': '{}',
      '.venv/pyvenv.cfg': 'home = /usr/bin\nversion = 3.11.2\n',
    });
    try {
      const found = detectSharedDeps(c.dir, '/home/me/proj', { env: { HOME: '/nonexistent' } });
      const byTarget = Object.fromEntries(found.deps.map((d) => [d.target, d]));
      assert.deepEqual(Object.keys(byTarget).sort(), [
        '/home/me/proj/.venv',
        '/home/me/proj/node_modules',
        '/home/me/proj/packages/core/node_modules',
      ]);
      assert.equal(byTarget['/home/me/proj/node_modules']!.detail, '3 packages');
      assert.equal(byTarget['/home/me/proj/.venv']!.detail, 'python 3.11.2');
      assert.equal(
        describeSharedDep(byTarget['/home/me/proj/node_modules']!, '/home/me/proj', 'overlay'),
        'node_modules from the checkout, 3 packages, read-only + overlay',
      );
      assert.match(
        describeSharedDep(byTarget['/home/me/proj/.venv']!, '/home/me/proj', 'read-only'),
        /^\.venv from the checkout, python 3\.11\.2, read-only$/,
      );
    } finally {
      c.cleanup();
    }
  });

  it('the Go module cache is shared at a path every cell user reaches, with the variables that keep go offline', () => {
    const c = checkout({ 'go.mod': 'module x\n', 'cache/mod/example.com/m@v1.0.0/go.mod': 'module m\n' });
    try {
      const found = detectSharedDeps(c.dir, c.dir, { env: { GOMODCACHE: join(c.dir, 'cache', 'mod') } });
      assert.deepEqual(
        found.deps.map((d) => [d.kind, d.source, d.target, d.layer]),
        [['go-module-cache', join(c.dir, 'cache', 'mod'), '/tmp/forge-deps/go-mod', 'read-only']],
      );
      assert.deepEqual(found.env, { GOMODCACHE: '/tmp/forge-deps/go-mod', GOPROXY: 'off', GOTOOLCHAIN: 'local' });
    } finally {
      c.cleanup();
    }
  });

  it('.forge/config.json adds and excludes; a bad one is refused with the field named', () => {
    const c = checkout({ 'vendor/bundle/gem/x.rb': '', 'venv/pyvenv.cfg': 'version = 3.11\n', 'node_modules/a/package.json': '{}' });
    // What a confirmed config.json asks for (repositoryConsent.ts decides whether it counts).
    const asked = () => {
      const r = readRepositoryFiles(c.dir).config;
      assert.equal(r.state, 'read');
      const deps = (r as { value: { dependencies: { share: string[]; exclude: string[] } } }).value.dependencies;
      return { share: deps.share.map((path) => ({ path, from: 'repository' as const })), exclude: deps.exclude };
    };
    try {
      writeFileSync(join(c.dir, 'cfg.json'), '');
      mkdirSync(join(c.dir, '.forge'));
      writeFileSync(
        join(c.dir, '.forge', 'config.json'),
        JSON.stringify({ dependencies: { share: ['vendor/bundle'], exclude: ['venv', 'node_modules'] } }),
      );
      const found = detectSharedDeps(c.dir, c.dir, { env: {}, ...asked() });
      assert.deepEqual(
        found.deps.map((d) => [d.kind, d.target]),
        [['configured', join(c.dir, 'vendor', 'bundle')]],
      );
      writeFileSync(join(c.dir, '.forge', 'config.json'), JSON.stringify({ dependencies: { shares: [] } }));
      assert.throws(
        () => readRepositoryFiles(c.dir),
        (e: Error) => e instanceof InputError && /config\.json in .*: dependencies: .*shares/.test(e.message),
      );
      writeFileSync(join(c.dir, '.forge', 'config.json'), '{ nope');
      assert.throws(
        () => readRepositoryFiles(c.dir),
        (e: Error) => e instanceof InputError && /is not valid JSON/.test(e.message) && !e.message.includes('nope'),
      );
      writeFileSync(join(c.dir, '.forge', 'config.json'), JSON.stringify({ dependencies: { share: ['../../etc'] } }));
      assert.throws(() => detectSharedDeps(c.dir, c.dir, { env: {}, ...asked() }), /leaves the repository/);
    } finally {
      c.cleanup();
    }
  });
});

describe('shared dependencies: mount planning (pure)', () => {
  const facts = { masked: ['/root', '/etc/shadow', '/tmp', '/home'], runnerHome: '/root', stateDir: '/root/.local/state/forge-cells' };

  it('never shares what the masks hide, a system tree or the runner state', () => {
    for (const p of ['/', '/etc', '/usr/lib', '/root', '/home', '/root/.local/state/forge-cells/cells', '/var/lib/docker'])
      assert.ok(refuseSharedSource(p, facts), p);
    for (const p of ['/root/go/pkg/mod', '/work/proj/node_modules', '/tmp/x/.venv']) assert.equal(refuseSharedSource(p, facts), null, p);
  });

  it('mounts go where the spec says; none covers the worktree, the kernel filesystems or another mount', () => {
    const wt = { top: '/repo/.git/forge-cells/a0', gitEntry: '/repo/.git/forge-cells/a0/.git' };
    const plan = planCellMounts(
      { mount_at: '/repo', shared_deps: [{ source: '/repo/node_modules', target: '/repo/node_modules', layer: 'overlay' }] },
      wt,
      (t) => t,
    );
    assert.deepEqual(plan.worktree, { source: wt.top, target: '/repo' });
    assert.deepEqual(plan.gitMetadata, { source: wt.gitEntry, target: '/repo/.git' });
    assert.equal(refuseMountPlan(plan), null);
    const bad = (mount_at: string, target: string) =>
      refuseMountPlan(planCellMounts({ mount_at, shared_deps: [{ source: '/s', target, layer: 'overlay' }] }, wt, (t) => t));
    assert.match(bad('/repo', '/')!, /cannot cover \//);
    assert.match(bad('/repo', '/proc/self')!, /inside \/proc/);
    assert.match(bad('/repo', '/repo')!, /two cell mounts|would cover the worktree/);
    assert.match(bad('/repo/x', '/repo')!, /would cover the worktree/);
    assert.match(bad('/usr/local/repo', '/usr/local/repo/node_modules')!, /system directory \/usr/);
  });
});

describe('gc of writable dependency layers', () => {
  it("removes the layers of a runner that is gone, leaves a live one's", async () => {
    const { collectStaleDependencyLayers } = await import('../../../runner/src/cells/staleDependencyLayers.js');
    const state = mkdtempSync(join(tmpdir(), 'forge-gc-layers-'));
    try {
      mkdirSync(join(state, 'layers', '999999-cell-a-0-x', 'merged'), { recursive: true });
      mkdirSync(join(state, 'layers', `${process.pid}-cell-b-0-y`, 'merged'), { recursive: true });
      const alive = (pid: number) => pid === process.pid;
      const dry = await collectStaleDependencyLayers(state, true, alive);
      assert.deepEqual(dry.map((i) => [i.id, i.action]).sort(), [
        [`${process.pid}-cell-b-0-y`, 'left'],
        ['999999-cell-a-0-x', 'would remove'],
      ]);
      await collectStaleDependencyLayers(state, false, alive);
      assert.deepEqual(readdirSync(join(state, 'layers')), [`${process.pid}-cell-b-0-y`]);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
