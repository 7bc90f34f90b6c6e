// Mocha root hooks: every test run writes cell logs to its own temporary state directory,
// never to the developer's ~/.local/state.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string | undefined;

export const mochaHooks = {
  beforeAll(): void {
    dir = mkdtempSync(join(tmpdir(), 'forge-state-'));
    process.env.FORGE_STATE_DIR = dir;
  },
  afterAll(): void {
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
};
