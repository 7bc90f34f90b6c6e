import type { Command } from 'commander';
import { join } from 'node:path';
import { runnerStateDir } from '../cells/cellIdentity.js';
import { confirmRepositoryFiles, viewRepositoryFiles } from '../repair/trust/repositoryTrust.js';
import { openStore } from '../store/openStore.js';
import { RunStore } from '../store/runStore.js';
import { locateRepository } from '../workspace/attemptWorktree.js';
import { printable } from './formatCellResult.js';

interface TrustFlags {
  repo: string;
  show?: boolean;
  revoke?: boolean;
  json?: boolean;
}

export function registerTrustCommand(program: Command): void {
  program
    .command('trust')
    .description(
      "Confirm what the repository's own files ask for, as they are now: .forgeinclude (untracked files copied into every\n" +
        'attempt) and .forge/config.json (directories shared with every cell). They come with the repository, so fix uses\n' +
        'them only after this; a file that changes must be confirmed again. Files that look like credentials (.env, keys)\n' +
        'are never copied from .forgeinclude: pass fix --include NAME for those. Recorded in $FORGE_STATE_DIR/forge.db.',
    )
    .option('--repo <dir>', 'the repository', '.')
    .option('--show', 'only show what the files ask for and whether it is confirmed')
    .option('--revoke', 'forget every confirmation for this repository')
    .option('--json', 'print JSON')
    .action(async (flags: TrustFlags) => {
      const top = (await locateRepository(flags.repo)).top;
      const store = new RunStore(openStore(join(runnerStateDir(), 'forge.db')));
      if (flags.revoke) {
        const n = store.revokeRepositoryFiles(top);
        process.stdout.write(
          flags.json ? `${JSON.stringify({ repo: top, revoked: n })}\n` : printable(`${top}: ${n} confirmation(s) forgotten`) + '\n',
        );
        return;
      }
      const confirmed = flags.show ? [] : confirmRepositoryFiles(top, store);
      const views = viewRepositoryFiles(top, store);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ repo: top, files: views }, null, 2)}\n`);
        return;
      }
      for (const v of views) {
        const mark = v.state === 'read' ? (v.confirmed ? 'confirmed' : 'not confirmed') : v.state === 'refused' ? 'refused' : 'absent';
        process.stdout.write(printable(`${v.file}: ${mark}: ${v.summary}${v.sha256 ? ` (sha256 ${v.sha256.slice(0, 12)})` : ''}`) + '\n');
      }
      if (!flags.show && confirmed.length === 0) process.stdout.write('nothing to confirm\n');
    });
}
