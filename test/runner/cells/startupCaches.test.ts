import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
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

  it('a successful bwrap probe is kept in the state directory; a bad or foreign cache entry is probed again', async function () {
    const first = await probeBubblewrap(process.env, dir);
    requireFeature(this, first.usable, `bubblewrap is not usable here: ${first.reason}`);
    const file = join(dir, 'bwrap-probe.json');
    assert.ok(existsSync(file));
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { key: string; at: number; probe: { reason: string } };
    // A cached answer is returned as saved (the reason is marked to tell it from a fresh probe).
    writeFileSync(file, JSON.stringify({ ...saved, probe: { ...saved.probe, reason: 'from the cache' } }));
    assert.equal((await probeBubblewrap(process.env, dir)).reason, 'from the cache');
    for (const bad of [
      { ...saved, key: 'another bwrap', probe: { ...saved.probe, reason: 'from the cache' } },
      { ...saved, at: Date.now() + 3_600_000, probe: { ...saved.probe, reason: 'from the cache' } },
      { ...saved, at: 0, probe: { ...saved.probe, reason: 'from the cache' } },
    ]) {
      writeFileSync(file, JSON.stringify(bad));
      assert.notEqual((await probeBubblewrap(process.env, dir)).reason, 'from the cache');
    }
    writeFileSync(file, '{not json');
    assert.equal((await probeBubblewrap(process.env, dir)).usable, true);
  });
});
