import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { InstanceChangedNotificationSchema, RPC_INSTANCE_METHODS } from '../../../runner/src/protocol/rpcInstances.js';
import { waitFor } from '../../helpers/waitFor.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

describe('forge-runner serve --stdio: instance methods over JSON-RPC', function () {
  this.timeout(60_000);
  let state: string;
  let child: ChildProcessWithoutNullStreams;
  let rpc: MessageConnection;
  let stderr = '';
  const changes: Array<{ instance_id: string; state: { state: string } }> = [];

  before(() => {
    if (!existsSync(RUNNER)) throw new Error('dist/runner.js missing: run npm run build first');
    state = mkdtempSync(join(tmpdir(), 'forge-rpc-'));
    child = spawn(process.execPath, [RUNNER, 'serve', '--stdio'], {
      env: { ...process.env, FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '' },
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    rpc.onNotification('instances/changed', (p: unknown) => {
      changes.push(InstanceChangedNotificationSchema.parse(p));
    });
    rpc.listen();
  });
  after(async () => {
    await rpc
      .sendRequest('instances/command', { request: { operation_id: 'rpc-d1', instance_id: 'rpc-1', generation: 1, action: 'destroy' } })
      .catch(() => undefined);
    await waitFor(() => changes.some((c) => c.state.state === 'destroyed'), 10_000).catch(() => undefined);
    rpc.dispose();
    child.stdin.end();
    await new Promise((r) => child.once('exit', r));
    rmSync(state, { recursive: true, force: true });
  });

  it('hello names the protocol and the embedded coordinator', async () => {
    const hello = RPC_INSTANCE_METHODS['runner/hello'].result.parse(await rpc.sendRequest('runner/hello', {}));
    assert.deepEqual([hello.protocol_version, hello.coordinator], ['instance-cell/v1', 'embedded']);
  });

  it('a command is acknowledged at once and the instance settles with pushed notifications', async () => {
    const reply = RPC_INSTANCE_METHODS['instances/command'].result.parse(
      await rpc.sendRequest('instances/command', {
        request: {
          operation_id: 'rpc-p1',
          instance_id: 'rpc-1',
          generation: 1,
          action: 'provision',
          payload: { spec: { provider: 'host', probe_interval_ms: 50 } },
        },
      }),
    );
    assert.equal(reply.status, 'dispatched');
    await waitFor(() => changes.some((c) => c.instance_id === 'rpc-1' && c.state.state === 'ready'), 20_000);
    const status = RPC_INSTANCE_METHODS['instances/status'].result.parse(
      await rpc.sendRequest('instances/status', { instance_id: 'rpc-1' }),
    );
    assert.equal(status.observation?.runtime_state, 'running');
    const list = RPC_INSTANCE_METHODS['instances/list'].result.parse(await rpc.sendRequest('instances/list', {}));
    assert.deepEqual(
      list.map((r) => [r.instance_id, r.state]),
      [['rpc-1', 'ready']],
    );
    const history = RPC_INSTANCE_METHODS['instances/history'].result.parse(
      await rpc.sendRequest('instances/history', { instance_id: 'rpc-1' }),
    );
    assert.ok(history.some((e) => e.event === 'enrolled'));
    const ledger = RPC_INSTANCE_METHODS['ledger/show'].result.parse(await rpc.sendRequest('ledger/show', { operation_id: 'rpc-p1' }));
    assert.equal(ledger.operation?.status, 'succeeded');
  });

  it('bad params and unknown methods get errors naming the problem; the server carries on', async () => {
    await assert.rejects(
      rpc.sendRequest('instances/status', { instance_id: '' }),
      (e: { code: number; message: string }) => e.code === -32602 && /instance_id/.test(e.message),
    );
    await assert.rejects(
      rpc.sendRequest('instances/command', { request: { operation_id: 'x', instance_id: 'y', generation: -1, action: 'provision' } }),
      (e: { code: number }) => e.code === -32602,
    );
    await assert.rejects(
      rpc.sendRequest('instances/command', {
        request: { operation_id: '../../etc/passwd', instance_id: 'y', generation: 1, action: 'provision', payload: {} },
      }),
      /instance spec/,
    );
    await assert.rejects(rpc.sendRequest('instances/status', { instance_id: 'nobody' }), /no instance nobody/);
    await assert.rejects(rpc.sendRequest('instances/explode', {}), (e: { code: number }) => e.code === -32601);
    assert.equal(RPC_INSTANCE_METHODS['runner/hello'].result.parse(await rpc.sendRequest('runner/hello', {})).coordinator, 'embedded');
  });

  it('survives a malformed frame on the wire', async () => {
    const junk = '{"jsonrpc":"2.0","id":99,"method":"runner/hello",';
    child.stdin.write(`Content-Length: ${Buffer.byteLength(junk)}\r\n\r\n${junk}`);
    await waitFor(() => /protocol error/.test(stderr), 5000);
    assert.equal(child.exitCode, null, 'still running');
  });
});
