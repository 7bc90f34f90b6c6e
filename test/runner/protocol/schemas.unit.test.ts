import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSchemaFile, schemaCatalog } from '../../../runner/src/protocol/schemaCatalog.js';
import { parseCellSpec } from '../../../runner/src/cells/provider.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { DEFAULT_LIMITS, DEFAULT_TIMEOUT_S } from '../../../runner/src/protocol/cellSpec.js';

describe('protocol schemas', () => {
  it('schemas/*.json match the zod schemas (run `npm run schemas` after changing one)', () => {
    const catalog = schemaCatalog();
    for (const [file, schema] of Object.entries(catalog)) {
      const committed = readFileSync(join('schemas', file), 'utf8');
      assert.equal(committed, renderSchemaFile(schema), `schemas/${file} is stale: run npm run schemas`);
    }
    const onDisk = readdirSync('schemas')
      .filter((f) => f.endsWith('.json'))
      .sort();
    assert.deepEqual(onDisk, Object.keys(catalog).sort(), 'schemas/ holds a file no zod schema produces');
  });

  it('fills CellSpec defaults', () => {
    const spec = parseCellSpec({ cmd: 'npm test' });
    assert.equal(spec.timeout_s, DEFAULT_TIMEOUT_S);
    assert.equal(spec.allow_net, false);
    assert.equal(spec.limits.memory_mib, DEFAULT_LIMITS.memory_mib);
    assert.equal(spec.limits.pids, DEFAULT_LIMITS.pids);
    assert.equal(spec.capture_diff, true);
  });

  it('rejects bad CellSpecs with one line naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ cmd: '   ' }, /cmd/],
      [{ cmd: [] }, /cmd/],
      [{ cmd: 'x', timeout_s: 0 }, /timeout_s/],
      [{ cmd: 'x', allow_net: true }, /allow_net/],
      [{ cmd: 'x', allow_net: ['evil host'] }, /allow_net/],
      [{ cmd: 'x', env: { 'A-B': '1' } }, /env/],
      [{ cmd: 'x', limits: { memory_mib: -5 } }, /limits\.memory_mib/],
      [{ cmd: 'x', worktree: 'rel' }, /worktree/],
      [{ cmd: 'x', surprise: 1 }, /CellSpec/],
      ['not an object', /CellSpec/],
    ];
    for (const [input, re] of cases) {
      assert.throws(
        () => parseCellSpec(input),
        (e: unknown) => e instanceof InputError && re.test(e.message) && !e.message.includes('\n'),
      );
    }
  });
});
