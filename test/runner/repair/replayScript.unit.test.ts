import assert from 'node:assert/strict';
import { InputError } from '../../../runner/src/protocol/inputError.js';
import { parseReplayScript, turnsForAttempt } from '../../../runner/src/repair/models/replayScript.js';

describe('replay scripts', () => {
  const script = {
    version: 1,
    attempts: [
      [{ tool_calls: [{ name: 'edit_file', arguments: { path: 'a.py', old_string: 'a - b', new_string: 'a + b' } }] }, { content: 'done' }],
      [{ tool_calls: [{ name: 'run_tests' }] }],
    ],
  };

  it('parses a valid script and plays attempts round-robin', () => {
    const s = parseReplayScript(JSON.stringify(script), 'x.json');
    assert.equal(turnsForAttempt(s, 0).length, 2);
    assert.deepEqual(turnsForAttempt(s, 3), turnsForAttempt(s, 1));
    const call = (turnsForAttempt(s, 1)[0] as { tool_calls: { arguments: object }[] }).tool_calls[0]!;
    assert.deepEqual(call.arguments, {});
  });

  it('rejects bad files with one line naming the problem', () => {
    const bad: [string, RegExp][] = [
      ['not json', /is not JSON/],
      [JSON.stringify({ version: 2, attempts: script.attempts }), /version/],
      [JSON.stringify({ version: 1, attempts: [] }), /attempts/],
      [JSON.stringify({ version: 1, attempts: [[{ tool_calls: [{ name: 'rm_rf', arguments: {} }] }]] }), /attempts\.0\.0/],
      [JSON.stringify({ version: 1, attempts: [[{ content: 'x', extra: 1 }]] }), /attempts\.0\.0/],
    ];
    for (const [text, re] of bad) {
      assert.throws(
        () => parseReplayScript(text, 'r.json'),
        (e: unknown) => e instanceof InputError && re.test(e.message) && !e.message.includes('\n'),
        text,
      );
    }
  });
});
