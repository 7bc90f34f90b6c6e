import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { guestCommandScript } from '../../../runner/src/cells/qemu/guestImage.js';
import { SWARM_WRAPPER_SCRIPT } from '../../../runner/src/cells/swarm/swarmCellScript.js';
import { requireFeature } from '../../helpers/requirement.js';

/** Scripts the runner writes for a shell inside a cell, run by the shell they are for (busybox sh). */
describe('cell scripts in a real busybox sh', function () {
  this.timeout(60_000);
  it('the guest command script carries any argv and environment exactly (run by a real busybox sh)', function () {
    const busybox = spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim();
    requireFeature(this, busybox !== '', 'no busybox on PATH (Debian busybox-static; .ci/run installs it)');
    const dir = mkdtempSync(join(tmpdir(), 'forge-script-'));
    try {
      const word = fc
        .string({
          unit: fc.oneof(
            fc.constantFrom("'", '"', '\\', '$', '`', '\n', ' ', '*', '=', '-', '!', ';'),
            fc.string({ minLength: 1, maxLength: 1 }),
          ),
          maxLength: 12,
        })
        .filter((s) => !s.includes('\0'));
      fc.assert(
        fc.property(
          fc.array(word, { maxLength: 5 }),
          fc.dictionary(fc.constantFrom('A', 'B_2', 'weird'), word, { maxKeys: 3 }),
          (args, env) => {
            const show = 'process.stdout.write(JSON.stringify({ argv: process.argv.slice(1), env: process.env }))';
            writeFileSync(join(dir, 'cmd'), guestCommandScript([process.execPath, '-e', show, '--', ...args], env, dir));
            const out = JSON.parse(execFileSync('env', ['-i', busybox, 'sh', join(dir, 'cmd')], { encoding: 'utf8' })) as {
              argv: string[];
              env: Record<string, string>;
            };
            assert.deepEqual(out.argv, args);
            assert.deepEqual(out.env, { ...env });
          },
        ),
        { numRuns: 60 },
      );
      // A first word with "=" is a program name, not an assignment.
      writeFileSync(join(dir, 'cmd'), guestCommandScript(['FOO=bar', 'true'], {}, dir));
      assert.equal(spawnSync('env', ['-i', busybox, 'sh', join(dir, 'cmd')]).status, 127);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the task wrapper is a script busybox sh accepts (checked by a real busybox sh)', function () {
    const busybox = spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim();
    requireFeature(this, busybox !== '', 'no busybox on PATH (Debian busybox-static; .ci/run installs it)');
    const r = spawnSync(busybox, ['sh', '-n'], { input: SWARM_WRAPPER_SCRIPT, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });
});
