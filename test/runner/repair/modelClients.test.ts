import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixReportSchema, type FixReport } from '../../../runner/src/protocol/fixReport.js';
import { git } from '../../helpers/gitRepo.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');
const FIX = { old_string: 'return sum(values) / (len(values) + 1)', new_string: 'return sum(values) / len(values)' };

function sampleRepo(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'forge-test-repo-'));
  cpSync(join(process.cwd(), 'samples', 'py-calc', 'repo'), dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Spawned asynchronously: the fake model server lives in this process and must keep answering. */
function fix(
  repo: string,
  model: string,
  env: Record<string, string>,
): Promise<{ status: number | null; stderr: string; report: FixReport | null }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        RUNNER,
        'fix',
        '--repo',
        repo,
        '--json',
        '--provider',
        'host',
        '--issue-text',
        'average() is wrong',
        '--model',
        model,
        '--attempts',
        '1',
      ],
      { env: { ...process.env, ...env } },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (status) => resolve({ status, stderr: err, report: out ? FixReportSchema.parse(JSON.parse(out)) : null }));
  });
}

async function fakeServer(
  handle: (path: string, headers: IncomingMessage['headers'], body: Record<string, unknown>) => unknown,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const reply = handle(req.url ?? '', req.headers, JSON.parse(raw || '{}'));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe('model clients against local stand-in endpoints (the model is the only double)', function () {
  this.timeout(120_000);

  it('OpenAI-compatible: bearer key, tool definitions, tool results fed back; the fix is real', async () => {
    const seen: { auth?: string; tools: string[]; toolMessages: unknown[] } = { tools: [], toolMessages: [] };
    const { server, url } = await fakeServer((path, headers, body) => {
      assert.equal(path, '/v1/chat/completions');
      seen.auth = String(headers.authorization);
      seen.tools = (body.tools as { function: { name: string } }[]).map((t) => t.function.name);
      const messages = body.messages as { role: string; content: string }[];
      seen.toolMessages = messages.filter((m) => m.role === 'tool');
      const turn = seen.toolMessages.length;
      const call =
        turn === 0
          ? { id: 'c1', type: 'function', function: { name: 'edit_file', arguments: JSON.stringify({ path: 'calc.py', ...FIX }) } }
          : { id: 'c2', type: 'function', function: { name: 'finish', arguments: '{"summary":"done"}' } };
      return {
        choices: [{ message: { role: 'assistant', content: null, tool_calls: [call] } }],
        usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
      };
    });
    const repo = sampleRepo();
    try {
      const r = await fix(repo.dir, 'openai:stand-in', { FORGE_BASE_URL: `${url}/v1`, FORGE_API_KEY: 'sk-test-key' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(seen.auth, 'Bearer sk-test-key');
      assert.ok(seen.tools.includes('edit_file') && seen.tools.includes('run_tests'));
      assert.match(JSON.stringify(seen.toolMessages), /edited calc\.py/);
      assert.equal(r.report!.attempts[0]!.tokens, 84);
      // Input and output apart, per turn (issue 31).
      assert.equal(r.report!.attempts[0]!.usage!.input_tokens, 60);
      assert.equal(r.report!.attempts[0]!.usage!.output_tokens, 24);
    } finally {
      server.close();
      repo.cleanup();
    }
  });

  it('Anthropic Messages: x-api-key, tool_use blocks in, tool_result blocks back', async () => {
    let results: unknown[] = [];
    let key = '';
    const { server, url } = await fakeServer((path, headers, body) => {
      assert.equal(path, '/v1/messages');
      key = String(headers['x-api-key']);
      const messages = body.messages as { role: string; content: unknown }[];
      results = messages
        .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
        .filter((b) => (b as { type: string }).type === 'tool_result');
      const block =
        results.length === 0
          ? { type: 'tool_use', id: 'tu1', name: 'edit_file', input: { path: 'calc.py', ...FIX } }
          : { type: 'tool_use', id: 'tu2', name: 'finish', input: { summary: 'done' } };
      return {
        content: [{ type: 'text', text: 'working' }, block],
        usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100 },
      };
    });
    const repo = sampleRepo();
    try {
      const r = await fix(repo.dir, 'anthropic:stand-in', { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: 'sk-ant-test' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(key, 'sk-ant-test');
      assert.match(JSON.stringify(results), /"tool_use_id":"tu1".*edited calc\.py/);
      // Cached prompt tokens were sent: they count as input.
      assert.equal(r.report!.attempts[0]!.usage!.input_tokens, 220);
      assert.equal(r.report!.attempts[0]!.usage!.output_tokens, 10);
    } finally {
      server.close();
      repo.cleanup();
    }
  });

  it('an unreachable endpoint fails the attempt with the error; the run still finishes and reports', async () => {
    const repo = sampleRepo();
    try {
      const r = await fix(repo.dir, 'openai:stand-in', { FORGE_BASE_URL: 'http://127.0.0.1:1/v1', FORGE_API_KEY: 'x' });
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.report!.status, 'not_fixed');
      assert.equal(r.report!.attempts[0]!.status, 'failed');
      assert.match(r.report!.attempts[0]!.error ?? '', /unreachable/);
    } finally {
      repo.cleanup();
    }
  });
});
