import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { BoundedOutputCollector, DISPLAY_HEAD_BYTES, DISPLAY_TAIL_BYTES } from '../../../runner/src/cells/boundedOutput.js';
import { TailRing } from '../../../runner/src/cells/tailRing.js';
import { scratchDir } from '../../helpers/gitRepo.js';

describe('TailRing', () => {
  it('always holds exactly the last `capacity` bytes written (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 30 }), (cap, chunks) => {
        const ring = new TailRing(cap);
        for (const c of chunks) ring.write(Buffer.from(c));
        const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
        assert.deepEqual(ring.contents(), all.subarray(Math.max(0, all.length - cap)));
      }),
    );
  });

  it('with capacity 0 keeps nothing', () => {
    const ring = new TailRing(0);
    ring.write(Buffer.from('abc'));
    assert.equal(ring.contents().length, 0);
  });
});

describe('BoundedOutputCollector', () => {
  let tmp: ReturnType<typeof scratchDir>;
  beforeEach(() => (tmp = scratchDir('forge-collector-')));
  afterEach(() => tmp.cleanup());

  it('returns small output untouched and logs all of it', () => {
    const path = join(tmp.dir, 'log');
    const c = new BoundedOutputCollector(path, 4096);
    c.push(Buffer.from('hello '));
    c.push(Buffer.from('world\n'));
    const s = c.finish();
    assert.deepEqual(s, { output: 'hello world\n', truncated: false, totalBytes: 12 });
    assert.equal(readFileSync(path, 'utf8'), 'hello world\n');
  });

  it('keeps head and tail with a marker, for display and for the log (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 4096, max: 20000 }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 1, max: 9000 }),
        (logBytes, total, chunk) => {
          const path = join(tmp.dir, `log-${logBytes}-${total}`);
          const data = Buffer.alloc(total);
          for (let i = 0; i < total; i++) data[i] = 97 + (i % 26);
          const c = new BoundedOutputCollector(path, logBytes);
          for (let i = 0; i < total; i += chunk) c.push(data.subarray(i, i + chunk));
          const s = c.finish();
          assert.equal(s.totalBytes, total);
          const shownLimit = DISPLAY_HEAD_BYTES + DISPLAY_TAIL_BYTES;
          assert.equal(s.truncated, total > shownLimit);
          if (!s.truncated) assert.equal(s.output, data.toString());
          else {
            assert.ok(s.output.startsWith(data.subarray(0, DISPLAY_HEAD_BYTES).toString()));
            assert.ok(s.output.endsWith(data.subarray(total - DISPLAY_TAIL_BYTES).toString()));
            assert.ok(s.output.includes(`[... forge: ${total - shownLimit} bytes of output omitted ...]`));
          }
          const log = readFileSync(path);
          if (total <= logBytes) assert.deepEqual(log, data);
          else {
            const head = Math.floor(logBytes / 2);
            const tail = logBytes - head;
            assert.deepEqual(log.subarray(0, head), data.subarray(0, head));
            assert.deepEqual(log.subarray(log.length - tail), data.subarray(total - tail));
            assert.ok(log.length < logBytes + 100);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
