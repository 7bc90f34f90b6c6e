// Qualification harness shipped in production on purpose: `forge-runner qualify` is a
// product command that measures an operator's instance setup (crash convergence via the fault
// points in ../management/faultPoints.ts, duplicate delivery, lost responses, stale
// generations, worker capability honesty in workerd), so this code ships with the runner
// rather than living under test/. It runs only when that command is invoked.

import { execa } from 'execa';
import { FAULT_POINTS } from '../management/faultPoints.js';
import { type MeasureResult, percentile, type QualifyContext } from './qualifyContext.js';

/**
 * The runner is SIGKILLed at each named fault point of a provision (a real `forge-runner
 * instance provision` process), then a fresh `forge-runner instance reconcile` must bring
 * the instance to ready without a second create.
 */
export async function restartDuringProvision(ctx: QualifyContext): Promise<MeasureResult> {
  const trials = ctx.options.full ? 100 : FAULT_POINTS.length;
  const env = { ...process.env, FORGE_STATE_DIR: ctx.stateDir, FORGE_CELLD_ENABLED: '' };
  const times: number[] = [];
  let converged = 0;
  let killed = 0;
  let extraEffects = 0;
  const failures: string[] = [];
  const specArgs = ctx.options.provider === 'docker' ? ['--provider', 'docker', '--image', ctx.spec().image!] : ['--provider', 'host'];
  for (let i = 0; i < trials; i++) {
    const point = FAULT_POINTS[i % FAULT_POINTS.length]!;
    const id = `restart-${i}`;
    const first = await execa(
      process.execPath,
      [
        ctx.options.runnerPath,
        'instance',
        'provision',
        '--instance',
        id,
        '--op-id',
        `${id}-p1`,
        '--generation',
        '1',
        ...specArgs,
        '--timeout',
        '60',
      ],
      {
        env: { ...env, FORGE_FAULT: point },
        reject: false,
      },
    );
    if (first.signal === 'SIGKILL') killed++;
    else failures.push(`${id}: not killed at ${point} (exit ${first.exitCode}): ${first.stderr.split('\n').slice(-1)[0]}`);
    const t0 = performance.now();
    const again = await execa(process.execPath, [ctx.options.runnerPath, 'instance', 'reconcile', id, '--json', '--timeout', '60'], {
      env,
      reject: false,
    });
    const elapsed = (performance.now() - t0) / 1000;
    let state = '?';
    try {
      state = (JSON.parse(again.stdout) as Array<{ state: string }>)[0]?.state ?? '?';
    } catch {
      failures.push(`${id}: reconcile printed no JSON (exit ${again.exitCode}): ${again.stderr.split('\n').slice(-1)[0]}`);
    }
    if (state === 'ready' && again.exitCode === 0) {
      converged++;
      times.push(elapsed);
    } else failures.push(`${id} (${point}): reconcile ended ${state}, exit ${again.exitCode}`);
    if (ctx.options.provider === 'host') extraEffects += Math.max(0, ctx.journal(id, 1).filter((l) => l.startsWith('start')).length - 1);
    ctx.options.onProgress?.(
      `restart during provision: trial ${i + 1}/${trials} killed at ${point}: ${state} after ${elapsed.toFixed(2)} s`,
    );
    await execa(
      process.execPath,
      [ctx.options.runnerPath, 'instance', 'destroy', '--instance', id, '--op-id', `${id}-d1`, '--generation', '1'],
      { env, reject: false },
    );
  }
  const p95 = percentile(times, 95);
  return {
    measure: 'management restart during provision',
    trials,
    result: `${converged}/${trials} converged (${killed} killed at ${FAULT_POINTS.length} fault points); p95 ${Number.isNaN(p95) ? '-' : p95.toFixed(2)} s after restart; ${extraEffects} second create(s)`,
    threshold: '100% converge; p95 under 30 s after restart',
    pass: converged === trials && killed === trials && extraEffects === 0 && p95 < 30,
    details: { fault_points: FAULT_POINTS, p95_s: p95, failures },
  };
}
