import assert from 'node:assert/strict';
import { parseKeyValueCounters, parseProcCgroup } from '../../../runner/src/cells/cgroupFiles.js';
import { decideKilledBy } from '../../../runner/src/cells/killedBy.js';
import { parseProcLimits, planRlimits, ulimitPairs } from '../../../runner/src/cells/rlimits.js';
import { encodeLaunchRequest } from '../../../runner/src/cells/cellLauncher.js';
import { logsToPrune } from '../../../runner/src/cells/cellLogRetention.js';
import { parseCellSpec } from '../../../runner/src/cells/provider.js';

const unlimited = { cpu_s: null, data_bytes: null, nproc: null, fsize_bytes: null, nofile: null };

describe('planRlimits / ulimitPairs', () => {
  const spec = parseCellSpec({ cmd: 'true', timeout_s: 10, limits: { memory_mib: 256, pids: 50 } });

  it('leaves memory and processes to the cgroup when one is enforced', () => {
    const r = planRlimits(spec, { cores: 2, cgroupMemory: true, cgroupPids: true, uidProcessCount: 300, hardLimits: unlimited });
    assert.equal(r.data_bytes, null);
    assert.equal(r.nproc, null);
    assert.equal(r.cpu_s, 21);
    assert.deepEqual(ulimitPairs(r), ['-t', '21', '-f', String(8 * 1024 * 1024), '-n', '65536']);
  });

  it('falls back to data-size (never address-space: wasm and V8 reserve more than they use) and process-count rlimits without a cgroup', () => {
    const r = planRlimits(spec, { cores: 2, cgroupMemory: false, cgroupPids: false, uidProcessCount: 300, hardLimits: unlimited });
    assert.equal(r.data_bytes, 256 * 1024 * 1024);
    assert.equal(r.nproc, 350);
    assert.deepEqual(ulimitPairs(r).slice(-4), ['-d', String(256 * 1024), '-u', '350']);
  });

  it('never asks for more than the runner’s own hard limits', () => {
    const r = planRlimits(spec, {
      cores: 2,
      cgroupMemory: true,
      cgroupPids: true,
      uidProcessCount: 0,
      hardLimits: { ...unlimited, nofile: 20000 },
    });
    assert.equal(r.nofile, 20000);
  });

  it('parses /proc/self/limits', () => {
    const text =
      'Limit                     Soft Limit           Hard Limit           Units\nMax cpu time              unlimited            unlimited            seconds\nMax processes             96365                96365                processes\nMax open files            1024                 20000                files\n';
    assert.deepEqual(parseProcLimits(text), { ...unlimited, nproc: 96365, nofile: 20000 });
  });
});

describe('cgroup file parsers', () => {
  it('reads v1 and v2 lines of /proc/self/cgroup', () => {
    const m = parseProcCgroup('4:memory:/process_api/abc\n8:pids:/\n3:cpu,cpuacct:/x\n0::/user.slice\n');
    assert.equal(m.get('memory'), '/process_api/abc');
    assert.equal(m.get('pids'), '/');
    assert.equal(m.get('cpuacct'), '/x');
    assert.equal(m.get(''), '/user.slice');
  });

  it('reads counters from memory.events / pids.events / memory.oom_control', () => {
    const m = parseKeyValueCounters('oom_kill_disable 0\nunder_oom 0\noom_kill 3\n');
    assert.equal(m.get('oom_kill'), 3);
    assert.equal(parseKeyValueCounters('max 12\n').get('max'), 12);
  });
});

describe('decideKilledBy', () => {
  const base = { killReason: null, oomKills: 0, pidsLimitHits: 0, exitCode: 0, signal: null } as const;
  it('names the one cause', () => {
    assert.equal(decideKilledBy(base), null);
    assert.equal(decideKilledBy({ ...base, exitCode: 1 }), null);
    assert.equal(decideKilledBy({ ...base, oomKills: 1, exitCode: 137, signal: 'SIGKILL' }), 'memory');
    assert.equal(decideKilledBy({ ...base, oomKills: 1, exitCode: 137, killReason: 'timeout' }), 'memory');
    assert.equal(decideKilledBy({ ...base, killReason: 'timeout', exitCode: 137, pidsLimitHits: 5 }), 'timeout');
    assert.equal(decideKilledBy({ ...base, killReason: 'output', exitCode: 137 }), 'output');
    // A cancel is the runner's own kill: said as such, not confused with a signal the command got.
    assert.equal(decideKilledBy({ ...base, killReason: 'cancel', exitCode: 137, signal: 'SIGKILL' }), 'cancel');
    assert.equal(decideKilledBy({ ...base, pidsLimitHits: 2, exitCode: 2 }), 'pids');
    assert.equal(decideKilledBy({ ...base, pidsLimitHits: 2, exitCode: 0 }), null);
    assert.equal(decideKilledBy({ ...base, exitCode: 143, signal: 'SIGTERM' }), 'signal');
  });
});

describe('encodeLaunchRequest', () => {
  it('NUL-terminates every word, ulimit pairs first, then -- and the argv', () => {
    assert.equal(encodeLaunchRequest(['-t', '5'], ['sh', '-c', 'echo "a b"']).toString(), '-t\x005\x00--\x00sh\x00-c\x00echo "a b"\x00');
  });
});

describe('logsToPrune', () => {
  it('keeps the newest maxFiles logs and drops those past maxAge', () => {
    const day = 24 * 3600 * 1000;
    const logs = [
      { name: 'a.log', mtimeMs: 10 * day },
      { name: 'b.log', mtimeMs: 9 * day },
      { name: 'c.log', mtimeMs: 8 * day },
      { name: 'old.log', mtimeMs: 0 },
    ];
    assert.deepEqual(logsToPrune(logs, 10 * day, { maxFiles: 2, maxAgeMs: 5 * day }).sort(), ['c.log', 'old.log']);
    assert.deepEqual(logsToPrune(logs, 10 * day, { maxFiles: 10, maxAgeMs: 5 * day }), ['old.log']);
  });
});
