import type { Command } from 'commander';
import { collectGarbage } from '../cells/garbageCollection.js';

export function registerGcCommand(program: Command): void {
  program
    .command('gc')
    .description(
      'Remove what crashed runners left behind: attempt worktrees under <repo>/.git/forge-cells with their forge/attempt/* branches,\n' +
        'cell containers (label forge.cell), swarm cells and qemu cell directories whose runner process is gone. Worktrees kept for review, runs still in progress\n' +
        'and branches without a worktree are left alone.',
    )
    .option('--repo <dir>', 'repository whose attempt worktrees to clean', '.')
    .option(
      '--docker-host <url>',
      "swarm: the manager whose services, configs and secrets of this host's dead runners to remove (default $DOCKER_HOST, else the local engine)",
    )
    .option('--dry-run', 'report what would be removed, remove nothing')
    .option('--json', 'print the report as JSON')
    .action(async (flags: { repo: string; dockerHost?: string; dryRun?: boolean; json?: boolean }) => {
      const dryRun = flags.dryRun ?? false;
      const { repo, items, notes } = await collectGarbage(flags.repo, dryRun, flags.dockerHost ? { dockerHost: flags.dockerHost } : {});
      if (flags.json) {
        process.stdout.write(JSON.stringify({ dry_run: dryRun, repo, items, notes }, null, 2) + '\n');
        return;
      }
      const acted = items.filter((i) => i.action !== 'left');
      for (const i of items) process.stdout.write(`${i.action.padEnd(12)} ${i.kind.padEnd(9)} ${i.id}: ${i.reason}\n`);
      for (const n of notes) process.stdout.write(`note: ${n}\n`);
      process.stdout.write(`${acted.length} ${dryRun ? 'to remove' : 'removed'}, ${items.length - acted.length} left\n`);
    });
}
