// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { execa } from 'execa';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CelldCellHost } from '../celld/celldCellHost.js';
import { startWorkerd } from '../celld/workerdRuntime.js';
import { InstanceCoordinator } from '../instanceCoordinator.js';
import type { MeasureResult, QualifyContext } from './qualifyContext.js';

/**
 * An instance provisioned while Celld was enabled stays operable after Celld is disabled,
 * through the normal CLI, and nothing contacts the (still configured) Celld URL.
 */
export async function celldDisabled(ctx: QualifyContext, workerBundle: string): Promise<MeasureResult> {
  const connections: string[] = [];
  const trap = createServer((s) => {
    connections.push(`${s.remoteAddress}:${s.remotePort}`);
    s.destroy();
  });
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()));
  const trapUrl = `http://127.0.0.1:${(trap.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'forge-qualify-celld-'));
  const secret = `qualify-${'c'.repeat(40)}`;
  const id = 'celld-off-1';
  const steps: Array<{ step: string; ok: boolean; detail: string }> = [];
  try {
    const wd = await startWorkerd({ bundle: workerBundle, storageDir: dir, secret, celldVersion: 'workerd-reference' });
    try {
      const viaCelld = new InstanceCoordinator(new CelldCellHost({ url: wd.url, secret, timeoutMs: 10_000 }), ctx.management);
      await viaCelld.submit({
        operation_id: `${id}-p1`,
        instance_id: id,
        generation: 1,
        action: 'provision',
        payload: { spec: ctx.spec() },
      });
      const r = await viaCelld.drive(id, { timeoutMs: 60_000 });
      steps.push({ step: 'provision with Celld enabled (workerd)', ok: r.state.state === 'ready', detail: r.state.state });
    } finally {
      await wd.stop();
    }
    const env = {
      ...process.env,
      FORGE_STATE_DIR: ctx.stateDir,
      FORGE_CELLD_ENABLED: '',
      FORGE_CELLD_URL: trapUrl,
      FORGE_CELLD_SECRET: secret,
    };
    const run = (args: string[]) => execa(process.execPath, [ctx.options.runnerPath, ...args], { env, reject: false });
    for (const [label, args] of [
      ['status with Celld disabled', ['instance', 'status', id]],
      ['stop with Celld disabled', ['instance', 'stop', '--instance', id, '--op-id', `${id}-s1`, '--generation', '1']],
      ['start with Celld disabled', ['instance', 'start', '--instance', id, '--op-id', `${id}-st1`, '--generation', '1']],
      ['destroy with Celld disabled', ['instance', 'destroy', '--instance', id, '--op-id', `${id}-d1`, '--generation', '1']],
    ] as const) {
      const r = await run([...args]);
      steps.push({ step: label, ok: r.exitCode === 0, detail: (r.stdout || r.stderr).split('\n')[0] ?? '' });
    }
  } finally {
    trap.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const okSteps = steps.filter((s) => s.ok).length;
  ctx.options.onProgress?.(`celld disabled: ${okSteps}/${steps.length} steps, ${connections.length} connection(s) to the Celld URL`);
  return {
    measure: 'Celld-disabled regression',
    trials: steps.length,
    result: `${okSteps}/${steps.length} lifecycle steps worked after disabling; ${connections.length} contact(s) with the configured Celld URL`,
    threshold: 'no network contact; existing instances operable',
    pass: okSteps === steps.length && connections.length === 0,
    details: { steps },
  };
}
