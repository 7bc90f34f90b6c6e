import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Mocha from 'mocha';

/**
 * extensionTestsPath entry: VS Code's extension host calls run(). The outcome is also
 * written to $FORGE_EXTENSION_HOST_RESULTS (when set) for a driver outside the host.
 */
export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', timeout: 240_000, color: false, reporter: 'spec' });
  mocha.addFile(join(__dirname, 'suite.cjs'));
  const passed: string[] = [];
  const failed: { title: string; error: string }[] = [];
  const failures = await new Promise<number>((resolve) => {
    const runner = mocha.run(resolve);
    runner.on('pass', (t) => passed.push(t.fullTitle()));
    runner.on('fail', (t, e: Error) => failed.push({ title: t.fullTitle(), error: String(e?.stack ?? e) }));
  });
  const out = process.env.FORGE_EXTENSION_HOST_RESULTS;
  if (out) writeFileSync(out, JSON.stringify({ failures, passed, failed }, null, 2));
  if (failures > 0) throw new Error(`${failures} extension-host test(s) failed`);
}
