import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A repository with `files` committed files, 500 per directory, each `lines` lines long. */
export function makeBenchRepo(prefix: string, files: number, lines = 1): { repo: string; git: (...args: string[]) => Buffer } {
  const repo = mkdtempSync(join(tmpdir(), prefix));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  git('init', '-q', '-b', 'main');
  for (let d = 0; d < Math.ceil(files / 500); d++) {
    mkdirSync(join(repo, `dir${d}`));
    for (let f = 0; f < 500 && d * 500 + f < files; f++)
      writeFileSync(join(repo, `dir${d}`, `file${f}.txt`), `content ${d}/${f}\n`.repeat(lines));
  }
  git('add', '-A');
  git('-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'bench');
  return { repo, git };
}
