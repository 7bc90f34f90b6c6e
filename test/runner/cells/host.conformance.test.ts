import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { LAUNCHER_SCRIPT } from '../../../runner/src/cells/cellLauncher.js';
import { detectCgroupSupport } from '../../../runner/src/cells/cgroup.js';
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
