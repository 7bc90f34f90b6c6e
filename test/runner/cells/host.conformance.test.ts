import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { LAUNCHER_SCRIPT } from '../../../runner/src/cells/cellLauncher.js';
import { detectCgroupSupport } from '../../../runner/src/cells/cgroup.js';
import { planRlimits, ulimitPairs } from '../../../runner/src/cells/rlimits.js';
import { parseCellSpec } from '../../../runner/src/cells/provider.js';
import { HostCellProvider } from '../../../runner/src/cells/providers/hostCellProvider.js';
import { requireFeature } from '../../helpers/requirement.js';
import { probeBubblewrap } from '../../../runner/src/cells/bubblewrapProbe.js';
import { describeCellProviderConformance } from './conformance.js';

describeCellProviderConformance({
  title: 'host (bubblewrap)',
  make: async () => {
    const probe = await probeBubblewrap();
    if (!probe.usable) return { unavailable: probe.reason };
    return { provider: new HostCellProvider({ bubblewrap: 'require' }) };
  },
});

// The degraded path must honour the same contract: it is what users without bubblewrap get.
describeCellProviderConformance({
  title: 'host (plain subprocess fallback)',
  mountAt: false,
  make: async () => ({ provider: new HostCellProvider({ bubblewrap: 'off' }) }),
});

describe('host provider lifecycle', function () {
  this.timeout(60_000);

  /** Live launcher processes (their argv[0] is bash running our launcher script). */
  function launcherPids(): number[] {
    const found: number[] = [];
    for (const e of readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      try {
        const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
        const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
        // ppid is field 4: only launchers of this test process count.
        if (cmd.includes('forge-cell') && cmd.includes('mapfile') && Number(stat.split(') ')[1]!.split(' ')[1]) === process.pid)
          found.push(Number(e));
      } catch {
        /* gone */
      }
    }
    return found;
  }

  it('keeps a prewarmed launcher between cells and leaves no process or cgroup after drain', async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    const provider = new HostCellProvider({ bubblewrap: 'require', prewarm: 2 });
    for (let i = 0; i < 3; i++) assert.equal((await provider.run({ cmd: ['true'] })).exit_code, 0);
    await new Promise((r) => setImmediate(r));
    assert.equal(launcherPids().length, 2, 'expected two prewarmed launchers waiting');
    await provider.drain();
    assert.deepEqual(launcherPids(), []);
    const support = detectCgroupSupport();
    if (support.version) {
      const own = readFileSync('/proc/self/cgroup', 'utf8');
      const leftovers = execFileSync('sh', ['-c', `find /sys/fs/cgroup -maxdepth 6 -type d -name '${process.pid}-*' 2>/dev/null || true`], {
        encoding: 'utf8',
      }).trim();
      assert.equal(leftovers, '', `cgroups left behind (runner cgroup ${own.trim()}):\n${leftovers}`);
    }
  });

  it('an unused launcher exits on its own when the runner goes away (stdin EOF)', async () => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', LAUNCHER_SCRIPT, 'forge-cell'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const code = new Promise<number | null>((r) => child.on('exit', r));
    child.stdin!.end();
    assert.equal(await code, 0);
  });
});

describe('two overlapping runs in one runner (issue 27: a crash is not a red test)', function () {
  this.timeout(60_000);

  // Each run of a long-lived runner has a provider of its own. Their cell cgroups once had
  // the same names, so the second run's cells got none, fell back to an address-space cap,
  // and vitest died with "WebAssembly.instantiate(): Out of memory".
  it('each run’s cells get a cgroup of their own, and a wasm module instantiates in every one', async function () {
    const probe = await probeBubblewrap();
    requireFeature(this, probe.usable, probe.reason);
    const support = detectCgroupSupport();
    requireFeature(this, support.version !== null, `no cgroups here: ${support.reason}`);
    const wasm =
      "WebAssembly.instantiate(new Uint8Array([0,97,115,109,1,0,0,0,5,3,1,0,1])).then(() => console.log('wasm ok'), (e) => { console.log(e.message); process.exit(3); })";
    const runs = [new HostCellProvider({ bubblewrap: 'require' }), new HostCellProvider({ bubblewrap: 'require' })];
    try {
      const results = await Promise.all(
        runs.flatMap((p) => [1, 2].map(() => p.run({ cmd: [process.execPath, '-e', wasm], limits: { memory_mib: 512 } }))),
      );
      for (const r of results) {
        assert.equal(r.isolation.cgroup.version, support.version, `a cell without its cgroup: ${r.isolation.cgroup.reason}`);
        assert.equal(r.isolation.rlimits.data_bytes, null);
        assert.equal(r.exit_code, 0, r.output);
        assert.match(r.output, /wasm ok/);
      }
    } finally {
      await Promise.all(runs.map((p) => p.drain()));
    }
  });

  it('without a cgroup, the rlimits a cell gets pass wasm and V8 reservations and still stop a hog', () => {
    const rl = planRlimits(parseCellSpec({ cmd: ['true'], limits: { memory_mib: 512 } }), {
      cores: 2,
      cgroupMemory: false,
      cgroupPids: false,
      uidProcessCount: 0,
      hardLimits: { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null },
    });
    const limits = ulimitPairs(rl);
    const run = (js: string) =>
      spawnSync(
        'bash',
        [
          '-c',
          `${chunk(limits)
            .map(([f, v]) => `ulimit ${f} ${v}`)
            .join('; ')}; exec "$0" -e "$1"`,
          process.execPath,
          js,
        ],
        {
          encoding: 'utf8',
        },
      );
    const wasm = run(
      "WebAssembly.instantiate(new Uint8Array([0,97,115,109,1,0,0,0,5,3,1,0,1])).then(() => console.log('wasm ok'), (e) => console.log(e.message))",
    );
    assert.match(wasm.stdout, /wasm ok/, wasm.stderr);
    const hog = run(
      "const a = []; try { for (let i = 0; i < 8; i++) a.push(Buffer.alloc(128 * 1024 * 1024, 1)); console.log('not stopped'); } catch { console.log('stopped'); }",
    );
    assert.match(hog.stdout + hog.stderr, /stopped|out of memory|Allocation failed/i);
    assert.doesNotMatch(hog.stdout, /not stopped/);
  });
});

/** ["-t", "301", "-d", "524288"] -> [["-t", "301"], ["-d", "524288"]] */
const chunk = (flat: string[]): [string, string][] => Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!]);
