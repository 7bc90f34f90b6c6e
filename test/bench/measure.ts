import { spawn } from 'node:child_process';

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Wall time of one child process from spawn to exit, in ms. */
export function timeSpawn(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(cmd, args, { stdio: 'ignore', env });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

export async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/**
 * Runs the variants round-robin so that machine noise (other tenants, CPU frequency) hits
 * them alike; only ratios measured this way are reported. The order rotates every round and
 * each sample starts after a short settle gap, because the kernel tears down the namespaces
 * of a finished sandbox asynchronously and whichever sample comes next would pay for it.
 */
export async function interleaved(
  variants: Record<string, () => Promise<number>>,
  runs: number,
  warmup = 3,
  settleMs = 25,
): Promise<Record<string, number[]>> {
  const names = Object.keys(variants);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < warmup + runs; i++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length]!;
      await new Promise((r) => setTimeout(r, settleMs));
      const ms = await variants[name]!();
      if (i >= warmup) samples[name]!.push(ms);
    }
  }
  return samples;
}

/** Median of per-round ratios a[i]/b[i]: pairs samples taken back to back, so drift cancels. */
export function pairedRatio(a: number[], b: number[]): number {
  return median(a.map((x, i) => x / b[i]!));
}
