import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import {
  type CellDriver,
  type CellStartContext,
  grantEgress,
  proxyEnv,
  runCellLifecycle,
} from '../../../runner/src/cells/cellLifecycle.js';
import { EgressProxy } from '../../../runner/src/cells/egressProxy.js';
import { parseCellSpec } from '../../../runner/src/cells/provider.js';
import { CellResultSchema } from '../../../runner/src/protocol/cellResult.js';
import type { IsolationReport } from '../../../runner/src/protocol/isolation.js';

/** A fake cell: prints what it is told, exits when killed or when `exit` is called. */
function fakeDriver(script: (ctx: CellStartContext, exit: (code: number | null, signal?: string) => void) => void) {
  const calls: string[] = [];
  let resolveExit!: (v: { code: number | null; signal: string | null }) => void;
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) => (resolveExit = r));
  let ctx!: CellStartContext;
  const driver: CellDriver<{ id: number }, { code: number | null; signal: string | null }> = {
    start: async (c) => {
      calls.push('start');
      ctx = c;
      return { id: 1 };
    },
    launch: () => {
      calls.push('launch');
      script(ctx, (code, signal) => resolveExit({ code, signal: signal ?? null }));
    },
    wait: () => exited,
    settle: async (_h, w) => {
      calls.push('settle');
      return { code: w.code, signal: w.signal, oomKills: 0, pidsLimitHits: 0 };
    },
    kill: () => {
      calls.push('kill');
      resolveExit({ code: null, signal: 'SIGKILL' });
    },
    cleanup: (h) => {
      calls.push(h ? 'cleanup' : 'cleanup(null)');
    },
  };
  return { driver, calls };
}

function isolation(): IsolationReport {
  return {
    mechanism: 'fake',
    degraded: false,
    namespaces: [],
    net: 'none',
    filesystem: '',
    user: '',
    masked_paths: [],
    rlimits: { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
    cgroup: { version: null, memory_max_bytes: null, pids_max: null, cpu_quota_cores: null, reason: null },
    warnings: [],
  };
}

describe('runCellLifecycle (the lifecycle every cell provider shares)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'forge-lifecycle-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const facts = (input: Record<string, unknown>, extra: { signal?: AbortSignal } = {}) => ({
    cellId: 'c1',
    provider: 'host' as const,
    spec: parseCellSpec({ cmd: 'x', ...input }),
    options: extra,
    logPath: join(dir, 'c1.log'),
    worktree: null,
    isolation: isolation(),
    egress: null,
    stateDir: dir,
  });

  it('runs start, launch, settle, cleanup in order and reports the exit', async () => {
    const { driver, calls } = fakeDriver((ctx, exit) => {
      ctx.output(Buffer.from('hello\n'));
      exit(3);
    });
    const r = await runCellLifecycle(facts({}), driver);
    assert.deepEqual(calls, ['start', 'launch', 'settle', 'cleanup']);
    assert.equal(r.exit_code, 3);
    assert.equal(r.output, 'hello\n');
    assert.equal(r.killed_by, null);
  });

  it('a cleanup that fails (a tree the cell made hard to remove) is a warning in the result, not an error instead of it', async () => {
    const { driver } = fakeDriver((_ctx, exit) => exit(0));
    driver.cleanup = () => {
      throw new Error("EACCES: permission denied, scandir '/tmp/forge-cell-x/tmp/x'");
    };
    const r = await runCellLifecycle(facts({}), driver);
    assert.equal(r.exit_code, 0);
    assert.ok(
      r.isolation.warnings.some((w) => /cell cleanup failed \(EACCES.*gc removes what is left/.test(w)),
      JSON.stringify(r.isolation.warnings),
    );
  });

  it('kills on timeout once, and names the timeout', async () => {
    const { driver, calls } = fakeDriver(() => undefined);
    const r = await runCellLifecycle(facts({ timeout_s: 0.05 }), driver);
    assert.equal(r.timed_out, true);
    assert.equal(r.killed_by, 'timeout');
    assert.deepEqual(calls, ['start', 'launch', 'kill', 'settle', 'cleanup']);
  });

  it('kills a cell that prints more than its output limit', async () => {
    const { driver } = fakeDriver((ctx) => ctx.output(Buffer.alloc(2000, 'a')));
    const r = await runCellLifecycle(facts({ limits: { output_bytes: 1000 } }), driver);
    assert.equal(r.killed_by, 'output');
    assert.ok(r.limits_hit.includes('output'));
  });

  it('cancels through an AbortSignal, also one aborted before the launch', async () => {
    const ac = new AbortController();
    ac.abort();
    const { driver } = fakeDriver(() => undefined);
    const r = await runCellLifecycle(facts({}, { signal: ac.signal }), driver);
    assert.equal(r.killed_by, 'cancel');
  });

  it('a failed start still cleans up (handle null) and revokes the egress grant', async () => {
    const proxy = new EgressProxy('127.0.0.1');
    const grant = grantEgress(proxy, 'c1', { allow_net: ['example.com'], deny_net: [] })!;
    assert.match(proxyEnv(grant, '10.0.0.1', 3128).HTTPS_PROXY!, /^http:\/\/c1:[^@]+@10\.0\.0\.1:3128$/);
    const calls: string[] = [];
    const driver = {
      start: async () => {
        throw new Error('no start');
      },
      launch: () => undefined,
      wait: async () => undefined,
      settle: async () => ({ code: 0, signal: null, oomKills: 0, pidsLimitHits: 0 }),
      kill: () => {
        calls.push('kill');
      },
      cleanup: (h: unknown) => {
        calls.push(h === null ? 'cleanup(null)' : 'cleanup');
      },
    };
    await assert.rejects(runCellLifecycle({ ...facts({}), egress: grant }, driver), /no start/);
    assert.deepEqual(calls, ['cleanup(null)']);
    assert.equal((proxy as unknown as { grants: Map<string, unknown> }).grants.has('c1'), false, 'the grant outlived the cell');
    assert.equal(grantEgress(proxy, 'c2', { allow_net: false, deny_net: [] }), null);
    assert.deepEqual(proxyEnv(null, 'h', 1), {});
  });

  it('a cell without an egress grant has an empty egress_denied record', async () => {
    const { driver } = fakeDriver((_ctx, exit) => exit(0));
    const r = await runCellLifecycle(facts({}), driver);
    assert.deepEqual(r.egress_denied, []);
    assert.equal(r.egress_denied_more, 0);
    assert.ok(!r.isolation.warnings.some((w) => w.startsWith('egress refused')));
  });

  it('puts what the proxy refused during the cell in its result, and the warning says the same', async () => {
    const proxy = new EgressProxy('127.0.0.1');
    const grant = grantEgress(proxy, 'c1', { allow_net: ['example.com'], deny_net: [] })!;
    const socket = join(dir, 'proxy.sock');
    const served = await proxy.serveCell('c1', socket);
    // The cell's own requests through its socket, while the command runs.
    const ask = (line: string) =>
      new Promise<string>((resolve, reject) => {
        const c = connect(socket, () =>
          c.write(`${line}\r\nHost: x\r\nProxy-Authorization: Basic ${Buffer.from(`c1:${grant.token}`).toString('base64')}\r\n\r\n`),
        );
        let data = '';
        c.on('data', (d) => (data += d.toString()));
        c.on('end', () => resolve(data.split('\r\n')[0]!));
        c.on('error', reject);
      });
    const statuses: string[] = [];
    const { driver } = fakeDriver((_ctx, exit) => {
      void (async () => {
        statuses.push(await ask('CONNECT registry.npmjs.org:443 HTTP/1.1'));
        statuses.push(await ask('CONNECT Registry.NPMJS.org.:443 HTTP/1.1'));
        statuses.push(await ask('GET http://[::1]/ HTTP/1.1'));
        exit(1);
      })();
    });
    const before = Date.now();
    try {
      const r = await runCellLifecycle({ ...facts({ allow_net: ['example.com'] }), egress: grant }, driver);
      assert.deepEqual(statuses, ['HTTP/1.1 403 Forbidden', 'HTTP/1.1 403 Forbidden', 'HTTP/1.1 403 Forbidden']);
      assert.deepEqual(
        r.egress_denied.map(({ first_at: _, ...d }) => d),
        [
          // The same host however it is written: one destination, counted twice.
          { host: 'registry.npmjs.org', port: 443, count: 2, refused_by: 'allow_net' },
          { host: '::1', port: 80, count: 1, refused_by: 'allow_net' },
        ],
      );
      const first = Date.parse(r.egress_denied[0]!.first_at);
      assert.ok(first >= before - 1000 && first <= Date.now(), r.egress_denied[0]!.first_at);
      assert.equal(r.egress_denied_more, 0);
      assert.ok(
        r.isolation.warnings.includes('egress refused (not in allow_net, or in deny_net): registry.npmjs.org:443 x2, [::1]:80'),
        r.isolation.warnings.join(' | '),
      );
      assert.equal(CellResultSchema.safeParse(r).success, true);
    } finally {
      await served.close();
      await proxy.close();
    }
  });
});
