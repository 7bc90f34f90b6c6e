import assert from 'node:assert/strict';
import Docker from 'dockerode';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { dockerUnavailable, TEST_IMAGES } from '../../helpers/docker.js';
import { requireFeature } from '../../helpers/requirement.js';

const RUNNER = join(process.cwd(), 'dist', 'runner.js');

/** A signal to the CLI cancels its cell like a timeout would: killed, removed, reported. */
describe('forge-runner spec-run / cell run: SIGTERM cancels the cell', function () {
  this.timeout(120_000);

  for (const command of ['spec-run', 'cell run'] as const) {
    it(`${command} on docker: the container is gone and the result says it was killed`, async function () {
      const why = await dockerUnavailable(TEST_IMAGES.busybox);
      requireFeature(this, why === null, why ?? '');
      const docker = new Docker({ socketPath: '/var/run/docker.sock' });
      const args =
        command === 'spec-run'
          ? ['spec-run', '--provider', 'docker', '-']
          : [
              'cell',
              'run',
              '--provider',
              'docker',
              '--image',
              TEST_IMAGES.busybox,
              '--json',
              '--no-diff',
              '--timeout',
              '600',
              '--',
              'sleep',
              '1000',
            ];
      const child = spawn(process.execPath, [RUNNER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.stdin.end(
        command === 'spec-run'
          ? JSON.stringify({ image: TEST_IMAGES.busybox, cmd: ['sleep', '1000'], timeout_s: 600, capture_diff: false })
          : '',
      );
      const mine = async () =>
        (await docker.listContainers({ all: true, filters: { label: [`forge.runner.pid=${child.pid}`] } })).map((c) => c.Id);
      let seen: string[] = [];
      for (let i = 0; i < 600 && seen.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        seen = await mine();
      }
      assert.ok(seen.length > 0, 'the cell never started');
      child.kill('SIGTERM');
      const code = await exited;
      assert.equal(code, 130, `exit code ${code}; stdout: ${stdout.slice(-500)}`);
      const result = JSON.parse(stdout) as { killed_by: string | null };
      assert.equal(result.killed_by, 'cancel', 'a cancelled cell is reported as cancelled');
      assert.deepEqual(await mine(), [], 'the container outlived the cancelled command');
    });
  }
});
