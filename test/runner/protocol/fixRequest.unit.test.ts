import assert from 'node:assert/strict';
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixStartParams } from '../../../extension/src/settings.js';
import { fixFromFlags, registerFixCommand } from '../../../runner/src/cli/fixCommand.js';
import { FIX_LIMITS, FixRequestSchema } from '../../../runner/src/protocol/fixRequest.js';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { RPC_FIX_METHODS } from '../../../runner/src/protocol/rpcFix.js';

/** One FixRequest: the CLI, fix/start and the extension's settings share its bounds and defaults. */
describe('FixRequest', () => {
  const minimal = { repo: '/tmp/r', issue: 'x', model: 'replay:x' };

  it('fills the defaults and bounds attempts to 1..64', () => {
    const r = FixRequestSchema.parse(minimal);
    assert.equal(r.attempts, 3);
    assert.equal(r.temperature, 0.7);
    assert.equal(r.max_turns, 30);
    assert.equal(r.max_tokens, 200_000);
    assert.equal(r.shared_deps, true);
    assert.deepEqual(r.allow_net, []);
    assert.equal(FixRequestSchema.parse({ ...minimal, attempts: 64 }).attempts, 64);
    for (const attempts of [0, 65, 1.5])
      assert.equal(FixRequestSchema.safeParse({ ...minimal, attempts }).success, false, String(attempts));
  });

  it('fix/start takes its params from it: same defaults, same bounds, no CLI-only field', () => {
    const params = RPC_FIX_METHODS['fix/start'].params;
    assert.equal(params.parse(minimal).attempts, FIX_LIMITS.attempts.default);
    assert.equal(params.safeParse({ ...minimal, attempts: 65 }).success, false);
    assert.equal(params.safeParse({ ...minimal, apply: true }).success, false, 'apply is the CLI only');
  });

  it("the extension's contributed settings and clamps agree with it", () => {
    const props = (
      JSON.parse(readFileSync('package.json', 'utf8')) as {
        contributes: { configuration: { properties: Record<string, { default: number; minimum: number; maximum: number }> } };
      }
    ).contributes.configuration.properties;
    assert.deepEqual(
      [props['forge.attempts']!.default, props['forge.attempts']!.minimum, props['forge.attempts']!.maximum],
      [FIX_LIMITS.attempts.default, FIX_LIMITS.attempts.min, FIX_LIMITS.attempts.max],
    );
    assert.deepEqual(
      [props['forge.maxTurns']!.default, props['forge.maxTurns']!.minimum, props['forge.maxTurns']!.maximum],
      [FIX_LIMITS.max_turns.default, FIX_LIMITS.max_turns.min, FIX_LIMITS.max_turns.max],
    );
    assert.deepEqual(
      [props['forge.cellTimeout']!.default, props['forge.cellTimeout']!.minimum, props['forge.cellTimeout']!.maximum],
      [FIX_LIMITS.cell_timeout_s.default, FIX_LIMITS.cell_timeout_s.min, FIX_LIMITS.cell_timeout_s.max],
    );
    const settings = {
      attempts: 100,
      provider: 'host' as const,
      image: '',
      testCommand: '',
      model: 'replay:x',
      maxTurns: 0,
      cellTimeout: 100_000,
    };
    const p = fixStartParams(settings, '/tmp/r', 'x', 'replay:x');
    assert.equal(p.attempts, 64);
    assert.equal(p.max_turns, 1);
    assert.equal(p.cell_timeout_s, FIX_LIMITS.cell_timeout_s.max);
    assert.equal(RPC_FIX_METHODS['fix/start'].params.safeParse(p).success, true);
  });

  it('the CLI defaults to it and refuses out-of-bounds flags in one line naming the flag', async () => {
    const program = new Command();
    registerFixCommand(program);
    const fix = program.commands.find((c) => c.name() === 'fix')!;
    assert.equal(fix.options.find((o) => o.long === '--attempts')!.defaultValue, '3');
    const flags = {
      repo: '.',
      issueText: 'x',
      model: `replay:${join(process.cwd(), 'samples', 'py-calc', 'replay.json')}`,
      provider: 'host',
      attempts: '3',
      temperature: '0.7',
      maxTurns: '30',
      maxTokens: '200000',
      timeoutPerAttempt: '900',
      cellTimeout: '300',
    };
    for (const [over, said] of [
      [{ attempts: '65' }, '--attempts 65: expected a whole number from 1 to 64'],
      [{ attempts: 'abc' }, '--attempts abc: expected a positive whole number'],
      [{ temperature: '3' }, '--temperature 3: expected a number from 0 to 2'],
      [{ temperature: 'hot' }, '--temperature hot: expected a number from 0 to 2'],
      [{ maxTurns: '501' }, '--max-turns 501: expected a whole number from 1 to 500'],
    ] as const) {
      await assert.rejects(
        fixFromFlags({ ...flags, ...over }, () => undefined),
        (e: Error) => e instanceof InputError && e.message === said,
        said,
      );
    }
  });
});
