import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../runner/src/cells/bubblewrapProbe.js';
import { openDirNoFollow } from '../../runner/src/cells/dependencyLayers.js';
import { HostCellProvider } from '../../runner/src/cells/providers/hostCellProvider.js';
import { DockerCellProvider } from '../../runner/src/cells/providers/dockerCellProvider.js';
import { InputError } from '../../runner/src/protocol/inputError.js';
import { makeRepo } from '../helpers/gitRepo.js';
import { dockerUnavailable, TEST_IMAGES } from '../helpers/docker.js';
import { requireFeature } from '../helpers/requirement.js';

/**
 * Shared dependencies and mount_at, attacked with what a cell, a repository and a spec control
 * (the red-team findings of issue 13, each turned into a test that tried to break it).
 */
describe('shared dependencies security (each test tries to break one claim)', function () {
  this.timeout(180_000);
  let provider: HostCellProvider;
  let docker: DockerCellProvider | null = null;
  const root = (process.getuid?.() ?? 0) === 0;

  before(async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    provider = new HostCellProvider({ bubblewrap: 'require' });
    if ((await dockerUnavailable(TEST_IMAGES.bookworm)) === null) docker = new DockerCellProvider();
  });
  after(async () => {
    await provider?.drain();
    await docker?.drain();
  });

  it('a dependency cannot cover what the cell start runs as root (setpriv, libc): targets outside the worktree and the cell scratch are refused', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const fake = mkdtempSync(join(tmpdir(), 'forge-fakebin-'));
    try {
      writeFileSync(join(fake, 'setpriv'), '#!/bin/sh\necho FAKE-SETPRIV-RAN; id -u\n', { mode: 0o755 });
      for (const target of ['/usr/bin', '/usr/lib/x86_64-linux-gnu', '/lib', '/etc', '/.forge', '/tmp', '/bin']) {
        await assert.rejects(
          provider.run({ cmd: 'id -u', worktree: repo.dir, shared_deps: [{ source: fake, target, layer: 'read-only' }] }),
          InputError,
          target,
        );
      }
    } finally {
      rmSync(fake, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it("a dependency cannot be mounted through another one (a link in the first one's content: q -> ../../../etc)", async () => {
    const repo = makeRepo({ 'a.txt': 'a\n', '.gitignore': 'evil/\netcfake/\n' });
    try {
      mkdirSync(join(repo.dir, 'evil'));
      symlinkSync('../../../etc', join(repo.dir, 'evil', 'q'));
      mkdirSync(join(repo.dir, 'etcfake'));
      for (const [a, b] of [
        ['/tmp/forge-deps/a', '/tmp/forge-deps/a/q'],
        [join(repo.dir, 'node_modules'), join(repo.dir, 'node_modules', 'q')],
      ]) {
        await assert.rejects(
          provider.run({
            cmd: 'id -u',
            worktree: repo.dir,
            mount_at: repo.dir,
            capture_diff: false,
            shared_deps: [
              { source: join(repo.dir, 'evil'), target: a!, layer: 'read-only' },
              { source: join(repo.dir, 'etcfake'), target: b!, layer: 'read-only' },
            ],
          }),
          (e: Error) => e instanceof InputError && /inside another one/.test(e.message),
        );
      }
      // mount_at through a host link (/var/run -> /run) is refused: the worktree would land elsewhere.
      if (lstatSync('/var/run').isSymbolicLink()) {
        await assert.rejects(
          provider.run({ cmd: 'true', worktree: repo.dir, mount_at: '/var/run/forge-x' }),
          (e: Error) => e instanceof InputError && /passes through the link/.test(e.message),
        );
      }
    } finally {
      repo.cleanup();
    }
  });

  it('a link the cell planted in the worktree does not redirect a dependency mount (node_modules -> /usr/bin)', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n', '.gitignore': 'deps/\n' });
    const deps = join(repo.dir, 'deps');
    try {
      mkdirSync(deps);
      writeFileSync(join(deps, 'setpriv'), '#!/bin/sh\necho FAKE-SETPRIV-RAN\n', { mode: 0o755 });
      // What an earlier cell of the attempt left behind.
      const planted = await provider.run({ cmd: 'ln -s /usr/bin node_modules && ln -s ../../usr a', worktree: repo.dir });
      assert.equal(planted.exit_code, 0, planted.output);
      for (const target of [join(repo.dir, 'node_modules'), join(repo.dir, 'a', 'bin')]) {
        await assert.rejects(
          provider.run({ cmd: 'id -u', worktree: repo.dir, mount_at: repo.dir, shared_deps: [{ source: deps, target, layer: 'overlay' }] }),
          (e: Error) => e instanceof InputError && /symbolic link/.test(e.message),
        );
      }
    } finally {
      rmSync(deps, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it("a spec's LD_PRELOAD never runs as root: the environment is set only after the switch to the cell user", async function () {
    const cc = spawnSync('/bin/sh', ['-c', 'command -v cc']).status === 0;
    requireFeature(this, cc, 'cc is not installed (build-essential)');
    const repo = makeRepo({ 'a.txt': 'a\n', '.gitignore': 'lib/\n' });
    // Inside the worktree: the cell sees it (a library outside would simply not load).
    const lib = join(repo.dir, 'lib');
    try {
      mkdirSync(lib, { mode: 0o755 });
      writeFileSync(
        join(lib, 'p.c'),
        '#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void f(void) { fprintf(stderr, "PRELOAD uid=%d\\n", (int)getuid()); }\n',
      );
      execFileSync('cc', ['-shared', '-fPIC', '-o', join(lib, 'p.so'), join(lib, 'p.c')]);
      chmodSync(join(lib, 'p.so'), 0o755);
      const r = await provider.run({ cmd: ['true'], worktree: repo.dir, env: { LD_PRELOAD: join(lib, 'p.so') } });
      assert.match(r.output, /PRELOAD uid=\d+/, 'the library never loaded: the test proved nothing');
      if (root) assert.doesNotMatch(r.output, /PRELOAD uid=0\b/, `loaded into a root process:\n${r.output}`);
      const plain = new HostCellProvider({ bubblewrap: 'off' });
      try {
        const p = await plain.run({ cmd: ['true'], worktree: repo.dir, env: { LD_PRELOAD: join(lib, 'p.so') } });
        if (root) assert.doesNotMatch(p.output, /PRELOAD uid=0\b/, `the plain fallback loaded it as root:\n${p.output}`);
      } finally {
        await plain.drain();
      }
    } finally {
      rmSync(lib, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it("sources inside hidden trees (home directories, /tmp of others, the state dir) are refused unless they are the repository's own or a toolchain cache", async () => {
    const home = process.env.HOME!;
    const secret = mkdtempSync(join(home, '.forge-secret-'));
    const repo = makeRepo({ 'a.txt': 'a\n' });
    try {
      await assert.rejects(
        provider.run({ cmd: 'true', worktree: repo.dir, shared_deps: [{ source: secret, target: join(repo.dir, 'node_modules') }] }),
        /cells must not see/,
      );
      const other = mkdtempSync(join(tmpdir(), 'forge-other-run-'));
      try {
        await assert.rejects(
          provider.run({ cmd: 'true', worktree: repo.dir, shared_deps: [{ source: other, target: '/tmp/forge-deps/x' }] }),
          /cells must not see/,
        );
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
      // A mount_at naming the home directory does not make the home "the repository".
      await assert.rejects(
        provider.run({ cmd: 'true', worktree: repo.dir, mount_at: home, shared_deps: [{ source: secret, target: join(home, 'x') }] }),
        InputError,
      );
      // The repository's own node_modules (the repository is in /tmp) is fine.
      mkdirSync(join(repo.dir, 'node_modules', 'pkg'), { recursive: true });
      const ok = await provider.run({
        cmd: 'ls node_modules',
        worktree: repo.dir,
        mount_at: repo.dir,
        shared_deps: [{ source: join(repo.dir, 'node_modules'), target: join(repo.dir, 'node_modules') }],
      });
      assert.equal(ok.output, 'pkg\n');
    } finally {
      rmSync(secret, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it('nothing on the host is chowned for a layer: a link in an installed .cache leads nowhere', async function () {
    requireFeature(this, root, 'layers need a root runner');
    const repo = makeRepo({ 'a.txt': 'a\n', '.gitignore': 'deps/\n' });
    const deps = join(repo.dir, 'deps');
    const victim = mkdtempSync(join(tmpdir(), 'forge-victim-'));
    try {
      writeFileSync(join(victim, 'f'), 'x', { mode: 0o600 });
      mkdirSync(join(deps, '.cache'), { recursive: true });
      symlinkSync(victim, join(deps, '.cache', 'link'));
      for (const p of [provider, ...(docker ? [docker] : [])]) {
        const r = await p.run({
          image: p === docker ? TEST_IMAGES.bookworm : '',
          cmd: 'touch node_modules/.cache/new && mkdir node_modules/made && echo writable',
          worktree: repo.dir,
          mount_at: repo.dir,
          shared_deps: [{ source: deps, target: join(repo.dir, 'node_modules') }],
        } as never);
        assert.match(r.output, /writable/, r.output);
        assert.equal(statSync(victim).uid, 0);
        assert.equal(statSync(join(victim, 'f')).uid, 0);
        assert.equal(lstatSync(join(deps, '.cache')).uid, 0);
        assert.throws(() => lstatSync(join(deps, '.cache', 'new')), 'the cell wrote into the source');
      }
    } finally {
      rmSync(victim, { recursive: true, force: true });
      repo.cleanup();
    }
  });

  it('what is mounted is what was vetted: a source reached through a swapped-in link is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-swap-'));
    try {
      mkdirSync(join(dir, 'real'));
      symlinkSync('/root', join(dir, 'sw'));
      assert.throws(() => openDirNoFollow(join(dir, 'sw')), /changed while it was being shared/);
      const fd = openDirNoFollow(join(dir, 'real'));
      assert.ok(fd > 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
