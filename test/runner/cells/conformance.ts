import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CellProvider, CellRunOptions } from '../../../runner/src/cells/provider.js';
import { CellResultSchema } from '../../../runner/src/protocol/cellResult.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { DISPLAY_HEAD_BYTES, DISPLAY_TAIL_BYTES } from '../../../runner/src/cells/boundedOutput.js';
import { git, makeRepo } from '../../helpers/gitRepo.js';

export interface ConformanceTarget {
  /** Suite title, e.g. "host (bubblewrap)". */
  title: string;
  /** Returns null (with a reason) when the provider cannot run on this machine. */
  make: () => Promise<{ provider: CellProvider } | { unavailable: string }>;
  /** Image to use for providers that need one. */
  image?: string;
  /** Where a host worktree appears inside the cell (default: the same path). */
  mountedAt?: (hostPath: string) => string;
  requireInCi?: boolean;
  /** False for a provider that does not mount shared dependencies yet (it must say so). */
  sharedDeps?: boolean;
  /** False for a provider that cannot mount the worktree elsewhere (it must say so). */
  mountAt?: boolean;
}

/**
 * The contract every cell provider honours. Each provider's test file calls this with its
 * own factory; nothing here knows which provider it is testing.
 */
export function describeCellProviderConformance(target: ConformanceTarget): void {
  describe(`cell provider conformance: ${target.title}`, function () {
    this.timeout(120_000);
    let provider: CellProvider;
    const image = target.image ?? '';

    before(async function () {
      const made = await target.make();
      if ('unavailable' in made) {
        if (process.env.CI === 'true' && target.requireInCi !== false)
          throw new Error(`CI requires provider ${target.title}: ${made.unavailable}`);
        console.log(`      skipped: ${made.unavailable}`);
        this.skip();
      }
      provider = (made as { provider: CellProvider }).provider;
    });
    after(async () => provider?.drain());

    const run = (spec: Record<string, unknown>, options?: CellRunOptions) => provider.run({ image, ...spec } as never, options);

    it('returns a schema-valid result with exit code 0 for a succeeding command', async () => {
      const r = await run({ cmd: 'echo hello' });
      CellResultSchema.parse(r);
      assert.equal(r.exit_code, 0);
      assert.equal(r.killed_by, null);
      assert.equal(r.timed_out, false);
      assert.equal(r.output, 'hello\n');
      assert.equal(r.diff, null);
    });

    it('passes a failing exit code through (shell string and argv forms)', async () => {
      assert.equal((await run({ cmd: 'exit 42' })).exit_code, 42);
      assert.equal((await run({ cmd: ['sh', '-c', 'exit 7'] })).exit_code, 7);
      assert.equal((await run({ cmd: ['/bin/false'] })).exit_code, 1);
    });

    it('passes argv words through without shell interpretation', async () => {
      const r = await run({ cmd: ['printf', '%s|', 'a b', '$HOME', '*'] });
      assert.equal(r.output, 'a b|$HOME|*|');
    });

    it('merges stdout and stderr in order', async () => {
      const r = await run({ cmd: 'echo one; echo two >&2; echo three' });
      assert.equal(r.output, 'one\ntwo\nthree\n');
    });

    it('kills a command that outlives its timeout', async () => {
      const r = await run({ cmd: 'sleep 60', timeout_s: 1 });
      assert.equal(r.timed_out, true);
      assert.equal(r.killed_by, 'timeout');
      assert.notEqual(r.exit_code, 0);
      assert.ok(r.duration_ms < 15_000, `took ${r.duration_ms} ms`);
    });

    it('a command killed for its timeout keeps the output it printed before (streamed as it came)', async () => {
      const streamed: string[] = [];
      const r = await run({ cmd: 'echo early-line; sleep 60', timeout_s: 5 }, { onOutput: (c) => streamed.push(c.toString()) });
      assert.equal(r.killed_by, 'timeout');
      assert.match(r.output, /early-line/);
      assert.match(streamed.join(''), /early-line/);
    });

    it('reports a command killed by a signal', async () => {
      const r = await run({ cmd: 'kill -TERM $$' });
      assert.equal(r.exit_code, 128 + 15);
      assert.equal(r.signal, 'SIGTERM');
      assert.equal(r.killed_by, 'signal');
    });

    it('bounds the output: head and tail shown, total counted, log capped', async () => {
      // 40000 numbered lines (~ 500 KB): far more than the display, less than the log cap.
      const r = await run({
        cmd: `awk 'BEGIN { for (i = 1; i <= 40000; i++) printf "line %06d\\n", i }'`,
        limits: { log_bytes: 64 * 1024 },
      });
      assert.equal(r.exit_code, 0);
      assert.equal(r.output_truncated, true);
      assert.equal(r.output_bytes, 40000 * 12);
      assert.ok(r.output.startsWith('line 000001\n'));
      assert.ok(r.output.endsWith('line 040000\n'));
      assert.match(r.output, /\[\.\.\. forge: \d+ bytes of output omitted \.\.\.\]/);
      assert.ok(Buffer.byteLength(r.output) <= DISPLAY_HEAD_BYTES + DISPLAY_TAIL_BYTES + 100);
      const log = readFileSync(r.full_output_path, 'utf8');
      assert.ok(statSync(r.full_output_path).size <= 64 * 1024 + 100);
      assert.ok(log.startsWith('line 000001\n') && log.endsWith('line 040000\n'));
    });

    it('kills a command that prints more than its output limit', async () => {
      const r = await run({ cmd: 'yes forge', limits: { output_bytes: 1024 * 1024 }, timeout_s: 60 });
      assert.equal(r.killed_by, 'output');
      assert.ok(r.limits_hit.includes('output'));
      assert.ok(r.output_bytes > 1024 * 1024);
      assert.ok(r.duration_ms < 30_000);
    });

    it('scrubs the environment to the allowlist plus spec.env', async () => {
      process.env.FORGE_CONFORMANCE_CANARY = 'canary-value-7f3a';
      try {
        const r = await run({ cmd: ['env'], env: { EXTRA_FLAG: 'yes' } });
        const vars = new Map(
          r.output
            .trim()
            .split('\n')
            .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
        );
        assert.ok(!r.output.includes('canary-value-7f3a'));
        assert.equal(vars.get('CI'), 'true');
        assert.equal(vars.get('PYTHONDONTWRITEBYTECODE'), '1');
        assert.equal(vars.get('EXTRA_FLAG'), 'yes');
        assert.ok(vars.get('PATH'));
        assert.notEqual(vars.get('HOME'), process.env.HOME);
        // HOSTNAME: set by container runtimes to the (random) container name; not a secret.
        // The host's CA bundle (a file of public certificates) for clients behind TLS inspection.
        const ca = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'GIT_SSL_CAINFO'];
        const allowed = new Set([
          'PATH',
          'LANG',
          'TERM',
          'CI',
          'PYTHONDONTWRITEBYTECODE',
          'HOME',
          'TMPDIR',
          'EXTRA_FLAG',
          'PWD',
          'SHLVL',
          '_',
          'OLDPWD',
          'HOSTNAME',
          ...ca,
        ]);
        for (const name of ca)
          if (vars.has(name))
            assert.ok(existsSync(vars.get(name)!) || vars.get(name) === '/etc/forge/ca.pem', `${name} names a file the cell cannot see`);
        for (const name of vars.keys()) assert.ok(allowed.has(name), `unexpected variable ${name} in the cell`);
      } finally {
        delete process.env.FORGE_CONFORMANCE_CANARY;
      }
    });

    it('captures the worktree diff: modified, added, deleted, binary named not dumped', async () => {
      const repo = makeRepo({ 'a.txt': 'alpha\n', 'gone.txt': 'bye\n', 'img.bin': Buffer.from([0, 1, 2, 3]) });
      try {
        const indexBefore = readFileSync(join(repo.dir, '.git', 'index'));
        const r = await run({
          worktree: repo.dir,
          cmd: "echo beta >> a.txt && rm gone.txt && printf 'new\\n' > new.txt && printf '\\000\\377secretbytes' > img.bin",
        });
        assert.equal(r.exit_code, 0, r.output);
        assert.ok(r.diff);
        const byPath = new Map(r.diff.files.map((f) => [f.path, f]));
        assert.equal(byPath.get('a.txt')?.status, 'modified');
        assert.equal(byPath.get('gone.txt')?.status, 'deleted');
        assert.equal(byPath.get('new.txt')?.status, 'added');
        assert.equal(byPath.get('img.bin')?.binary, true);
        assert.match(r.diff.patch, /\+beta/);
        assert.match(r.diff.patch, /\+new/);
        assert.match(r.diff.patch, /Binary files a\/img.bin and b\/img.bin differ/);
        assert.ok(!r.diff.patch.includes('secretbytes'));
        assert.deepEqual(readFileSync(join(repo.dir, '.git', 'index')), indexBefore, "the user's index was modified");
        assert.equal(existsSync(join(repo.dir, 'new.txt')), true, 'worktree writes must persist');
      } finally {
        repo.cleanup();
      }
    });

    it('caps the diff and names untracked files it left out', async () => {
      const repo = makeRepo({ 'a.txt': 'a\n' });
      try {
        const r = await run({
          worktree: repo.dir,
          // 20 text files of ~110 KB: each under the text threshold, together over the patch cap.
          cmd: 'for i in $(seq 1 20); do seq 1 20000 > f$i.txt; done && head -c 20000000 /dev/zero > huge.dat',
        });
        assert.equal(r.exit_code, 0, r.output);
        assert.ok(r.diff);
        assert.ok(
          r.diff.omitted.some((o) => o.path === 'huge.dat'),
          JSON.stringify(r.diff.omitted),
        );
        assert.equal(r.diff.truncated, true);
        assert.ok(Buffer.byteLength(r.diff.patch) <= 1024 * 1024);
      } finally {
        repo.cleanup();
      }
    });

    it('runs in the worktree and leaves the repository HEAD alone', async () => {
      const repo = makeRepo({ 'a.txt': 'a\n' });
      try {
        const head = git(repo.dir, 'rev-parse', 'HEAD');
        const r = await run({ worktree: repo.dir, cmd: 'pwd && cat a.txt' });
        assert.equal(r.output, `${(target.mountedAt ?? ((p: string) => p))(repo.dir)}\na\n`);
        assert.equal(git(repo.dir, 'rev-parse', 'HEAD'), head);
        assert.deepEqual(r.diff?.files, []);
      } finally {
        repo.cleanup();
      }
    });

    // A cell differs from the user's machine only where isolation requires it: the places test
    // tools write (Python's multiprocessing and pytest-xdist need /dev/shm, tempfile /tmp or
    // $TMPDIR, some tools /var/tmp, caches $HOME) are there and writable by the cell's user.
    it('the places test tools write are writable by the cell user: /dev/shm (a tmpfs), /tmp, /var/tmp, $HOME, $TMPDIR', async () => {
      const r = await run({
        cmd: [
          'for d in /dev/shm /tmp /var/tmp "$HOME" "${TMPDIR:-/tmp}"; do',
          '  if echo x > "$d/forge-probe-$$" 2>/dev/null && rm "$d/forge-probe-$$"; then echo "ok $d"; else echo "not writable: $d"; fi;',
          'done;',
          'grep -q "^[^ ]* /dev/shm tmpfs " /proc/mounts && echo "shm tmpfs"',
        ].join(' '),
      });
      assert.equal(r.exit_code, 0, r.output);
      assert.doesNotMatch(r.output, /not writable/);
      assert.match(r.output, /^shm tmpfs$/m);
    });

    it('without network, localhost still resolves (test servers bind to it)', async () => {
      const r = await run({ cmd: 'grep -E "^(127\\.0\\.0\\.1|::1)[[:space:]].*localhost" /etc/hosts >/dev/null && echo resolves' });
      assert.equal(r.output, 'resolves\n');
    });

    it('mount_at: the worktree appears at the repository path given, its .git read-only there, and the diff is still taken', async () => {
      const repo = makeRepo({ 'a.txt': 'a\n' });
      const at = join(tmpdir(), `forge-mount-at-${process.pid}-${Date.now()}`);
      try {
        const r = await run({
          worktree: repo.dir,
          mount_at: at,
          cmd: 'pwd; cat a.txt; echo b > b.txt; echo x 2>/dev/null >> .git/config && echo wrote-git || echo git-ro',
        });
        assert.equal(r.exit_code, 0, r.output);
        if (target.mountAt === false) assert.match(r.isolation.warnings.join('\n'), /mount_at and shared dependencies need bubblewrap/);
        else assert.equal(r.output, `${at}\na\ngit-ro\n`);
        assert.deepEqual(
          r.diff?.files.map((f) => f.path),
          ['b.txt'],
        );
        assert.equal(existsSync(at), false, 'the mount point must not appear on the host');
        await assert.rejects(run({ worktree: repo.dir, mount_at: '/proc/x', cmd: 'true' }), InputError);
        await assert.rejects(run({ worktree: repo.dir, mount_at: '/usr/lib/x', cmd: 'true' }), InputError);
        await assert.rejects(run({ worktree: repo.dir, mount_at: `${at}/../etc`, cmd: 'true' }), InputError);
        await assert.rejects(run({ mount_at: at, cmd: 'true' }), InputError);
      } finally {
        repo.cleanup();
      }
    });

    const targetInfo = target;
    it('shared_deps: installed dependencies read-only to the cell, writes go to a layer discarded with it, the source never changes', async function () {
      // The installed dependencies of the repository itself (sources elsewhere under /tmp are refused).
      const repo = makeRepo({ 'a.txt': 'a\n', '.gitignore': 'node_modules/\ninstalled/\n' });
      const deps = join(repo.dir, 'installed');
      try {
        mkdirSync(join(deps, 'left-pad'), { recursive: true });
        writeFileSync(join(deps, 'left-pad', 'index.js'), 'module.exports = 1;\n');
        const target = join(repo.dir, 'node_modules');
        const r = await run({
          worktree: repo.dir,
          mount_at: repo.dir,
          shared_deps: [{ source: deps, target }],
          cmd: 'cat node_modules/left-pad/index.js; echo x > node_modules/left-pad/index.js 2>/dev/null && echo wrote-pkg; mkdir -p node_modules/.cache/tool && echo c > node_modules/.cache/tool/f && echo cache-ok; true',
        });
        if (targetInfo.sharedDeps === false || targetInfo.mountAt === false) {
          assert.match(r.isolation.warnings.join('\n'), /shared dependencies (are not mounted|need bubblewrap)/);
          assert.deepEqual(readdirSync(deps), ['left-pad'], 'the source changed');
          return;
        }
        assert.equal(r.exit_code, 0, r.output);
        assert.match(r.output, /^module.exports = 1;\n/);
        assert.doesNotMatch(r.output, /wrote-pkg/);
        if ((process.getuid?.() ?? 0) === 0) assert.match(r.output, /cache-ok/, 'a root runner gives the cell an overlay layer');
        assert.deepEqual(readdirSync(deps), ['left-pad'], 'the source changed');
        assert.equal(readFileSync(join(deps, 'left-pad', 'index.js'), 'utf8'), 'module.exports = 1;\n');
        assert.deepEqual(r.diff?.files, []);
        await assert.rejects(run({ worktree: repo.dir, shared_deps: [{ source: '/etc', target }], cmd: 'true' }), InputError);
        await assert.rejects(
          run({ worktree: repo.dir, shared_deps: [{ source: join(deps, 'missing'), target }], cmd: 'true' }),
          InputError,
        );
        await assert.rejects(run({ worktree: repo.dir, shared_deps: [{ source: deps, target: '/proc/x' }], cmd: 'true' }), InputError);
      } finally {
        repo.cleanup();
      }
    });

    it('rejects bad specs with an InputError before running anything', async () => {
      const repo = makeRepo({ 'a.txt': 'a\n' });
      try {
        const marker = join(repo.dir, 'ran');
        await assert.rejects(run({ cmd: '' }), InputError);
        await assert.rejects(run({ cmd: `touch ${marker}`, timeout_s: -1 }), InputError);
        await assert.rejects(run({ cmd: `touch ${marker}`, worktree: join(repo.dir, 'missing') }), InputError);
        await assert.rejects(run({ cmd: `touch ${marker}`, worktree: 'relative/path' }), InputError);
        await assert.rejects(run({ cmd: `touch ${marker}`, bogus: 1 }), InputError);
        assert.equal(existsSync(marker), false);
      } finally {
        repo.cleanup();
      }
    });

    it('cancels a running cell through an AbortSignal', async () => {
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 300);
      const r = await provider.run({ image, cmd: 'sleep 60' } as never, { signal: abort.signal });
      assert.equal(r.killed_by, 'cancel');
      assert.ok(r.duration_ms < 15_000);
    });
  });
}
