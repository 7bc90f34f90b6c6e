/** Polls until `f` returns something truthy (and returns it), or fails naming what it waited for. */
export async function waitFor<T>(f: () => T | undefined | false | null, ms = 30_000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
