import type { Context } from 'mocha';

/**
 * A test that needs a machine feature (bubblewrap, dockerd, qemu) may skip locally, with the
 * reason printed, but never in CI: with CI=true a missing feature fails the test.
 */
export function requireFeature(ctx: Context, available: boolean, reason: string): void {
  if (available) return;
  if (process.env.CI === 'true') throw new Error(`CI requires this: ${reason}`);
  console.log(`      skipped: ${reason}`);
  ctx.skip();
}
