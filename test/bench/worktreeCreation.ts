import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../runner/src/workspace/attemptWorktree.js';
import type { BenchLine } from './hostCellOverhead.js';
import { makeBenchRepo } from './benchRepo.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

/** createAttemptWorktree vs raw `git worktree add -b` on a repository of `files` files. */
export async function benchWorktreeCreation(files: number, runs: number): Promise<BenchLine[]> {
  const { repo, git } = makeBenchRepo('forge-bench-repo-', files);
  try {
    let n = 0;
    const samples = await interleaved(
      {
        raw_git: async () => {
          const id = `raw${n++}`;
          const path = join(repo, '.forge', 'raw', id);
          const t = await timeAsync(async () => git('worktree', 'add', '--quiet', '-b', `bench/${id}`, path, 'HEAD'));
          git('worktree', 'remove', '--force', path);
          git('branch', '-D', `bench/${id}`);
          return t;
        },
        forge: async () => {
          const id = `f${n++}`;
          let wt: Awaited<ReturnType<typeof createAttemptWorktree>> | undefined;
          const t = await timeAsync(async () => {
            wt = await createAttemptWorktree(repo, 'HEAD', id);
          });
          await destroyAttemptWorktree(wt!);
          return t;
        },
      },
      runs,
      1,
      20,
    );
    const ratio = pairedRatio(samples.forge!, samples.raw_git!);
    return [
      { name: `raw git worktree add (${files} files)`, value: median(samples.raw_git!), unit: 'ms' },
      { name: 'createAttemptWorktree', value: median(samples.forge!), unit: 'ms' },
      { name: 'createAttemptWorktree / raw git', value: ratio, unit: 'x', target: '<= 1.2x', met: ratio <= 1.2 },
    ];
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}
