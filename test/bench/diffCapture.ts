import { execa } from 'execa';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../runner/src/workspace/attemptWorktree.js';
import { captureWorktreeDiff } from '../../runner/src/workspace/captureWorktreeDiff.js';
import type { BenchLine } from './hostCellOverhead.js';
import { makeBenchRepo } from './benchRepo.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

/**
 * The diff capture as it was before the runner's git view (commit 1480afe), kept here only as
 * the bench's baseline: a scratch index from `read-tree` (no stat information, so every file
 * is hashed by each of three diffs) and git discovered from the tree.
 */
async function legacyCapture(worktree: string): Promise<number> {
  const scratch = mkdtempSync(join(tmpdir(), 'forge-legacy-diff-'));
  const env = { GIT_INDEX_FILE: join(scratch, 'index'), GIT_OPTIONAL_LOCKS: '0' };
  const safe = [
    '-c',
    'safe.directory=*',
    '-c',
    'core.fsmonitor=false',
    '-c',
    'core.hooksPath=/dev/null',
    '-c',
    'diff.external=',
    '-c',
    'core.quotePath=false',
  ];
  const git = async (args: string[], input?: string) =>
    (
      await execa('git', [...safe, ...args], {
        cwd: worktree,
        env,
        ...(input !== undefined ? { input } : {}),
        maxBuffer: 256 * 1024 * 1024,
      })
    ).stdout;
  try {
    await git(['read-tree', 'HEAD']);
    const untracked = (await git(['ls-files', '-z', '--others', '--exclude-standard'])).split('\0').filter(Boolean);
    if (untracked.length > 0)
      await git(['add', '--intent-to-add', '--pathspec-from-file=-', '--pathspec-file-nul'], untracked.join('\0') + '\0');
    const diffArgs = [
      '-c',
      'core.bigFileThreshold=1048576',
      'diff',
      '--no-color',
      '--no-ext-diff',
      '--no-textconv',
      '--ignore-submodules=all',
      '-M',
    ];
    const patch = await git(diffArgs);
    await git([...diffArgs, '--name-status', '-z']);
    await git([...diffArgs, '--numstat', '-z']);
    return patch.length;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Diff capture of an attempt worktree of `files` files with `changed` of them changed (nine
 * in ten modified, one in ten new), the runner's capture vs the legacy one, side by side.
 */
export async function benchDiffCapture(files: number, changed: number, runs: number): Promise<BenchLine[]> {
  const { repo } = makeBenchRepo('forge-bench-diff-', files, 20);
  try {
    const wt = await createAttemptWorktree(repo, 'HEAD', 'bench-diff');
    try {
      const modified = Math.floor(changed * 0.9);
      for (let i = 0; i < modified; i++) writeFileSync(join(wt.path, `dir${i % 40}`, `file${Math.floor(i / 40)}.txt`), `changed ${i}\n`);
      mkdirSync(join(wt.path, 'added'));
      for (let i = 0; i < changed - modified; i++) writeFileSync(join(wt.path, 'added', `new${i}.txt`), `new ${i}\n`);
      let forgeFiles = 0;
      const samples = await interleaved(
        {
          legacy: async () => timeAsync(() => legacyCapture(wt.path)),
          forge: async () =>
            timeAsync(async () => {
              forgeFiles = (await captureWorktreeDiff({ location: wt.location, base: wt.baseCommit })).files_total;
            }),
        },
        runs,
        1,
        50,
      );
      if (forgeFiles !== changed) throw new Error(`capture listed ${forgeFiles} changed files, expected ${changed}`);
      const ratio = pairedRatio(samples.forge!, samples.legacy!);
      return [
        { name: `legacy capture (${files} files, ${changed} changed)`, value: median(samples.legacy!), unit: 'ms' },
        { name: 'captureWorktreeDiff (bounded, git view)', value: median(samples.forge!), unit: 'ms' },
        { name: 'captureWorktreeDiff / legacy', value: ratio, unit: 'x', target: '<= 1.0x', met: ratio <= 1.0 },
      ];
    } finally {
      await destroyAttemptWorktree(wt);
    }
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}
