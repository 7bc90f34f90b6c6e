// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CAPABILITIES } from '../../protocol/instanceCell.js';
import { capabilityDescriptor, requireCapabilities } from '../capabilityMatrix.js';
import { CelldCellHost } from '../celld/celldCellHost.js';
import { startWorkerd } from '../celld/workerdRuntime.js';
import type { MeasureResult, QualifyContext } from './qualifyContext.js';

const WORKER_EXCLUSIONS = ['task.exec', 'session.pty', 'workspace.bind', 'process.spawn'] as const;

/**
 * Negative claims: the worker-celld runtime publishes process, PTY and workspace as
 * excluded, requests needing them are refused, and inside a real workerd the worker's own
 * attempts at process, PTY, host filesystem, raw TCP/SSH and private network all fail.
 */
export async function capabilityHonesty(ctx: QualifyContext, workerBundle: string): Promise<MeasureResult> {
  const checks: Array<{ what: string; ok: boolean }> = [];
  for (const runtime of ['qemu', 'docker', 'host', 'worker-celld'] as const) {
    const d = capabilityDescriptor(runtime);
    checks.push({ what: `${runtime} lists every capability`, ok: CAPABILITIES.every((c) => d.capabilities[c] !== undefined) });
  }
  const worker = capabilityDescriptor('worker-celld');
  for (const cap of WORKER_EXCLUSIONS) {
    checks.push({ what: `worker-celld publishes ${cap}=no`, ok: worker.capabilities[cap] === 'no' });
    let refused = false;
    try {
      requireCapabilities(worker, [cap]);
    } catch {
      refused = true;
    }
    checks.push({ what: `a ${cap} request to worker-celld is refused`, ok: refused });
  }
  // A listener the worker must not reach (stands in for SSH on a private address).
  const listener = createServer((s) => s.destroy());
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
  const port = (listener.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'forge-qualify-workerd-'));
  const secret = `qualify-${'s'.repeat(40)}`;
  try {
    const wd = await startWorkerd({ bundle: workerBundle, storageDir: dir, secret, celldVersion: 'workerd-reference' });
    try {
      const host = new CelldCellHost({ url: wd.url, secret, timeoutMs: 10_000 });
      const published = await host.capabilities();
      checks.push({
        what: 'the running worker publishes the same exclusions',
        ok: WORKER_EXCLUSIONS.every((c) => published.capabilities[c] === 'no'),
      });
      for (const a of await host.capabilityProbe(`127.0.0.1:${port}`))
        checks.push({ what: `in workerd: ${a.attempt} refused (${a.detail.slice(0, 60)})`, ok: a.refused });
    } finally {
      await wd.stop();
    }
  } finally {
    listener.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const failed = checks.filter((c) => !c.ok);
  ctx.options.onProgress?.(`capability honesty: ${checks.length - failed.length}/${checks.length}`);
  return {
    measure: 'worker capability honesty',
    trials: checks.length,
    result: `${checks.length - failed.length}/${checks.length} negative checks hold${failed.length ? `; failed: ${failed.map((f) => f.what).join('; ')}` : ''}`,
    threshold: '100% of process, PTY, workspace, raw TCP/SSH, filesystem claims rejected',
    pass: failed.length === 0,
    details: { checks },
  };
}
