import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAttemptWorktree, destroyAttemptWorktree } from '../../runner/src/workspace/attemptWorktree.js';
import type { BenchLine } from './hostCellOverhead.js';
import { interleaved, median, pairedRatio, timeAsync } from './measure.js';

/** createAttemptWorktree vs raw `git worktree add -b` on a repository of `files` files. */
export async function benchWorktreeCreation(files: number, runs: number): Promise<BenchLine[]> {
  const repo = mkdtempSync(join(tmpdir(), 'forge-bench-repo-'));
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    git('init', '-q', '-b', 'main');
    for (let d = 0; d < Math.ceil(files / 500); d++) {
      mkdirSync(join(repo, `dir${d}`));
      for (let f = 0; f < 500 && d * 500 + f < files; f++) writeFileSync(join(repo, `dir${d}`, `file${f}.txt`), `content ${d}/${f}\n`);
    }
    git('add', '-A');
    git('-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'bench');
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
