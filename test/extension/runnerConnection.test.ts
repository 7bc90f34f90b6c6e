import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerConnection } from '../../extension/src/runner/runnerConnection.js';
import { resolveRunnerLaunch } from '../../extension/src/runner/runnerLaunch.js';
import { replyWithLanguageModel, toChatMessages } from '../../extension/src/flows/languageModelBridge.js';
import { fake, LanguageModelTextPart, LanguageModelToolCallPart, LanguageModelToolResultPart } from './fakes/vscode.js';
import { waitFor } from '../helpers/waitFor.js';

describe('runner client: runtime choice, start errors, crash restart', function () {
  this.timeout(60_000);
  let scratch: string;
  before(() => (scratch = mkdtempSync(join(tmpdir(), 'forge-client-'))));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('a forge.runner.nodePath that cannot run, or has the wrong ABI, is one line naming the setting', async () => {
    await assert.rejects(
      resolveRunnerLaunch({ extensionPath: process.cwd(), nodePathSetting: '/nonexistent/node', env: process.env }),
      /^Error: forge\.runner\.nodePath is \/nonexistent\/node, but could not run it .*Point the setting at such a node binary\.$/,
    );
    const fakeNode = join(scratch, 'node22');
    writeFileSync(fakeNode, '#!/bin/sh\necho "127 22.1.0"\n', { mode: 0o755 });
    await assert.rejects(
      resolveRunnerLaunch({ extensionPath: process.cwd(), nodePathSetting: fakeNode, env: process.env }),
      /it is Node 22\.1\.0 \(ABI 127\); the runner needs Node 20/,
    );
    const ok = await resolveRunnerLaunch({ extensionPath: process.cwd(), nodePathSetting: process.execPath, env: process.env });
    assert.equal(ok.nodePath, process.execPath);
    assert.match(ok.runnerScript, /dist\/runner\.js$/);
  });

  it('a runner that dies at start: the start fails with its last stderr line, and a restart is scheduled with backoff', async () => {
    const script = join(scratch, 'dies.js');
    writeFileSync(script, "process.stderr.write('forge-runner: cannot open the store: disk full\\n'); process.exit(3);\n");
    const crashes: { detail: string; restarting: boolean; delayMs: number }[] = [];
    const conn = new RunnerConnection(async () => ({ nodePath: process.execPath, runnerScript: script, env: process.env }), {
      state: () => undefined,
      crash: (detail, restarting, delayMs) => crashes.push({ detail, restarting, delayMs }),
      notification: () => undefined,
      log: () => undefined,
    });
    await assert.rejects(conn.start(), /the Forge runner exited with code 3: forge-runner: cannot open the store: disk full/);
    // The restart after 500 ms crashes again (a loaded machine may take a while to get there).
    await waitFor(() => crashes.length >= 2, 30_000, 'the second crash').catch(() => undefined);
    await conn.stop();
    assert.ok(crashes.length >= 2, `restarted after the first crash: ${JSON.stringify(crashes)}`);
    assert.deepEqual(
      crashes.slice(0, 2).map((c) => [c.restarting, c.delayMs]),
      [
        [true, 500],
        [true, 1000],
      ],
    );
  });

  it('answers are checked against the protocol: bad params come back as errors, the connection survives', async () => {
    const conn = new RunnerConnection(
      async () => ({ nodePath: process.execPath, runnerScript: join(process.cwd(), 'dist', 'runner.js'), env: process.env }),
      {
        state: () => undefined,
        crash: () => undefined,
        notification: () => undefined,
        log: () => undefined,
      },
    );
    try {
      await assert.rejects(conn.request('runs/show', { run_id: '../x' }), /run_id/);
      assert.deepEqual(await conn.request('runs/list', { limit: 1 }), []);
    } finally {
      await conn.stop();
    }
    assert.equal(conn.state, 'down');
  });
});

describe('VS Code language model bridge', () => {
  beforeEach(() => fake.reset());

  it('maps runner messages to chat messages and streams text and tool calls back', async () => {
    const req = {
      attempt_index: 0,
      turn_index: 1,
      temperature: 0.3,
      messages: [
        { role: 'system' as const, content: 'You fix bugs.' },
        { role: 'user' as const, content: 'average is wrong' },
        { role: 'assistant' as const, content: '', tool_calls: [{ id: 't1', name: 'read_file', arguments: { path: 'calc.py' } }] },
        { role: 'tool' as const, content: '1: def average', tool_call_id: 't1' },
      ],
      tools: [{ name: 'read_file', description: 'read', parameters: { type: 'object' } }],
    };
    const chat = toChatMessages(req) as unknown as { role: string; content: unknown }[];
    assert.deepEqual(
      chat.map((m) => m.role),
      ['user', 'user', 'assistant', 'user'],
    );
    assert.ok((chat[2]!.content as unknown[])[0] instanceof LanguageModelToolCallPart);
    assert.ok((chat[3]!.content as unknown[])[0] instanceof LanguageModelToolResultPart);
    let seen: { options?: { tools?: { name: string }[]; modelOptions?: { temperature?: number } } } = {};
    fake.languageModels = [
      {
        sendRequest: async (_m: unknown, options: typeof seen.options) => {
          seen = { options };
          return {
            stream: (async function* () {
              yield new LanguageModelTextPart('Looking. ');
              yield new LanguageModelToolCallPart('c9', 'edit_file', { path: 'calc.py', old_string: 'a', new_string: 'b' });
            })(),
          };
        },
      },
    ];
    const reply = await replyWithLanguageModel(req, null);
    assert.equal(reply.content, 'Looking. ');
    assert.deepEqual(reply.tool_calls, [{ id: 'c9', name: 'edit_file', arguments: { path: 'calc.py', old_string: 'a', new_string: 'b' } }]);
    assert.deepEqual([seen.options?.tools?.[0]?.name, seen.options?.modelOptions?.temperature], ['read_file', 0.3]);
  });

  it('no language model available: one line naming what to do', async () => {
    await assert.rejects(
      replyWithLanguageModel({ attempt_index: 0, turn_index: 0, temperature: 0, messages: [], tools: [] }, 'gpt-9'),
      /no VS Code language model of family gpt-9 is available; sign in to a provider/,
    );
  });
});
