import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median } from './measure.js';

/** Extension activation (fresh process each sample) and runner spawn-to-ready (runner/hello answered), medians. */
export async function benchExtensionStartup(rounds: number): Promise<BenchLine[]> {
  const state = mkdtempSync(join(tmpdir(), 'forge-bench-ext-'));
  const env = { ...process.env, FORGE_STATE_DIR: state, FORGE_CELLD_ENABLED: '' };
  try {
    const activation = async (): Promise<number> => {
      const out = await new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'bench', 'extensionActivationProbe.ts')], {
          env,
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let s = '';
        child.stdout.on('data', (d: Buffer) => (s += d.toString()));
        child.once('error', reject);
        child.once('exit', (code) => (code === 0 ? resolve(s) : reject(new Error(`activation probe exited ${code}`))));
      });
      return Number(out.trim().split('\n')[0]);
    };
    // Ready = the handshake answered; the store and providers load behind it, so the first
    // answer that reads the store (runs/list, what the views ask first) is reported too.
    const firstData: number[] = [];
    const runnerReady = async (): Promise<number> => {
      const t = performance.now();
      const child = spawn(process.execPath, [join('dist', 'runner.js'), 'serve', '--stdio'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
      const rpc = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
      rpc.listen();
      await rpc.sendRequest('runner/hello', {});
      const ms = performance.now() - t;
      await rpc.sendRequest('runs/list', { limit: 20 });
      firstData.push(performance.now() - t);
      rpc.dispose();
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
      return ms;
    };
    // The floor under any runner: a bare Node process answering one line on stdin.
    const bareNode = async (): Promise<number> => {
      const t = performance.now();
      const child = spawn(process.execPath, ['-e', "process.stdin.once('data', () => { process.stdout.write('ok'); process.exit(0); })"], {
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      child.stdin.write('x');
      await new Promise((r) => child.stdout.once('data', r));
      const ms = performance.now() - t;
      await new Promise((r) => child.once('exit', r));
      return ms;
    };
    const s = await interleaved({ activation, runnerReady, bareNode }, rounds, 2);
    const act = median(s.activation!);
    const ready = median(s.runnerReady!);
    return [
      { name: 'extension activation (median)', value: act, unit: 'ms', target: '< 50 ms', met: act < 50 },
      { name: 'runner spawn-to-ready (median)', value: ready, unit: 'ms', target: '< 300 ms', met: ready < 300 },
      { name: 'runner spawn-to-first runs/list (median)', value: median(firstData.slice(-rounds)), unit: 'ms' },
      { name: 'bare node spawn-to-answer (median)', value: median(s.bareNode!), unit: 'ms' },
      { name: 'runner ready / bare node', value: median(s.runnerReady!.map((r, i) => r / s.bareNode![i]!)), unit: 'x' },
    ];
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}
