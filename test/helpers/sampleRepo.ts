import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git } from './gitRepo.js';

export const SAMPLES = join(process.cwd(), 'samples');

/** A sample's repo as a fresh git repository (the tests' copy, like the demo's). */
export function sampleRepo(name: string): { dir: string; cleanup: () => void } {
  const work = mkdtempSync(join(tmpdir(), 'forge-test-repo-'));
  cpSync(join(SAMPLES, name, 'repo'), work, { recursive: true });
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'base');
  return { dir: work, cleanup: () => rmSync(work, { recursive: true, force: true }) };
}
