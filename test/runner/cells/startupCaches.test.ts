import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBubblewrap } from '../../../runner/src/cells/bubblewrapProbe.js';
import { PRUNE_INTERVAL_MS, pruneCellLogs } from '../../../runner/src/cells/cellLogRetention.js';
import { requireFeature } from '../../helpers/requirement.js';

/** What a one-shot `cell run` no longer pays on every call: the log sweep and the bwrap probe. */
describe('start-up work done once, not per cell', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'forge-startup-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('cell logs are swept at most once per interval, and again once it has passed', async () => {
    const policy = { maxFiles: 2, maxAgeMs: 1e12 };
    const write = (n: number) => {
      for (let i = 0; i < n; i++) writeFileSync(join(dir, `cell-${i}.log`), '');
    };
    const logs = () => readdirSync(dir).filter((n) => n.endsWith('.log')).length;
    write(70);
    assert.equal(await pruneCellLogs(dir, policy), 68);
    write(70);
    assert.equal(await pruneCellLogs(dir, policy), 0, 'a second sweep within the interval');
    assert.equal(logs(), 70);
    const past = (Date.now() - PRUNE_INTERVAL_MS - 1000) / 1000;
    utimesSync(join(dir, '.pruned'), past, past);
    assert.equal(await pruneCellLogs(dir, policy), 68);
    assert.equal(logs(), 2);
  });

  it('a successful bwrap probe is kept in the state directory; a bad, foreign or planted cache entry is probed again', async function () {
    const first = await probeBubblewrap(process.env, dir);
    requireFeature(this, first.usable, `bubblewrap is not usable here: ${first.reason}`);
    const file = join(dir, 'bwrap-probe.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { key: string; at: number; version: string };
    const plant = (entry: object, mode = 0o600) => {
      rmSync(file, { force: true });
      writeFileSync(file, JSON.stringify(entry), { mode });
    };
    // A cached answer is used as saved (its version is marked to tell it from a fresh probe)...
    plant({ ...saved, version: 'from the cache' });
    const cached = await probeBubblewrap(process.env, dir);
    assert.equal(cached.version, 'from the cache');
    // ...but never chooses the binary: that is always the bwrap found on PATH.
    plant({ ...saved, version: 'from the cache', path: '/tmp/not-bwrap', probe: { usable: true, path: '/tmp/not-bwrap' } });
    assert.equal((await probeBubblewrap(process.env, dir)).path, first.path);
    for (const bad of [
      { ...saved, key: 'another bwrap', version: 'from the cache' },
      { ...saved, at: Date.now() + 3_600_000, version: 'from the cache' },
      { ...saved, at: 0, version: 'from the cache' },
    ]) {
      plant(bad);
      assert.notEqual((await probeBubblewrap(process.env, dir)).version, 'from the cache', JSON.stringify(bad));
    }
    // Not the runner's own file: readable by others, owned by someone else, or a link.
    plant({ ...saved, version: 'from the cache' }, 0o644);
    chmodSync(file, 0o644);
    assert.notEqual((await probeBubblewrap(process.env, dir)).version, 'from the cache', 'mode 644');
    if (process.getuid?.() === 0) {
      plant({ ...saved, version: 'from the cache' });
      chownSync(file, 65532, 65532);
      assert.notEqual((await probeBubblewrap(process.env, dir)).version, 'from the cache', 'owned by another user');
    }
    const elsewhere = join(dir, 'elsewhere.json');
    writeFileSync(elsewhere, JSON.stringify({ ...saved, version: 'from the cache' }), { mode: 0o600 });
    rmSync(file, { force: true });
    symlinkSync(elsewhere, file);
    assert.notEqual((await probeBubblewrap(process.env, dir)).version, 'from the cache', 'a link');
    rmSync(file, { force: true });
    writeFileSync(file, '{not json', { mode: 0o600 });
    assert.equal((await probeBubblewrap(process.env, dir)).usable, true);
  });
});
