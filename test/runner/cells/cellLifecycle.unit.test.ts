import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
    const grant = grantEgress(proxy, 'c1', ['example.com'])!;
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
    assert.equal(grantEgress(proxy, 'c2', false), null);
    assert.deepEqual(proxyEnv(null, 'h', 1), {});
  });
});
